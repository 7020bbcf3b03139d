#pragma once
// Candidate vs baseline: speedup of medians with a bootstrap confidence
// interval, and a verdict that says when a difference is only noise.
//
// speedup = median(baseline) / median(candidate)   (> 1: candidate faster)
// The CI comes from a bootstrap that resamples rounds, then samples within them.
// With the practical threshold t and the CI [lo, hi]:
//   SAME       lo >= 1/(1+t) and hi <= 1+t   (the whole CI is practically equal)
//   FASTER     lo >  1+t                     (faster by more than t, beyond noise)
//   SLOWER     hi <  1/(1+t)                 (slower by more than t, beyond noise)
//   AMBIGUOUS  anything else (CI straddles a band edge, or too few samples)
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace magpie::kernel {

enum class Verdict { kFaster, kSlower, kSame, kAmbiguous };
const char* to_string(Verdict v);

struct VerdictSettings {
  double threshold = 0.02;
  int resamples = 2000;
  uint64_t seed = 42;
  double confidence = 0.95;
  size_t min_samples = 3;  // per side; fewer → AMBIGUOUS
};

struct SpeedupEstimate {
  double baseline_median = 0;
  double candidate_median = 0;
  double speedup = 0;
  double ci_low = 0;
  double ci_high = 0;
  Verdict verdict = Verdict::kAmbiguous;
  std::string reason;
};

// Samples grouped by round (performance run): a two-level bootstrap. Each
// resample draws rounds with replacement, then samples with replacement within
// each drawn round, and takes the median of them pooled; so drift between
// rounds widens the CI instead of passing for a difference. The point estimate
// is the ratio of the pooled medians; min_samples counts all samples of a side.
// Empty rounds are ignored. Times in any unit, the same for both; deterministic
// for a given seed.
SpeedupEstimate compare_samples(std::span<const std::vector<double>> baseline_rounds,
                                std::span<const std::vector<double>> candidate_rounds,
                                const VerdictSettings& settings = {});

// Ungrouped samples: one round each side (a plain bootstrap of both medians).
SpeedupEstimate compare_samples(std::span<const double> baseline, std::span<const double> candidate,
                                const VerdictSettings& settings = {});

// Median of unsorted values (copies).
double median_of(std::span<const double> xs);

}  // namespace magpie::kernel
