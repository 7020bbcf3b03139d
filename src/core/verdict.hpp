#pragma once
// Candidate vs baseline: a ratio of statistics with a bootstrap confidence
// interval, and a verdict that says when a difference is only noise. Shared by
// kernel compare (medians of timing samples) and the results diff (serving
// metrics over per-request records).
//
// speedup = median(baseline) / median(candidate)   (> 1: candidate faster)
// The CI comes from a bootstrap that resamples rounds, then samples within them.
// With the practical threshold t and the CI [lo, hi]:
//   SAME       lo >= 1/(1+t) and hi <= 1+t   (the whole CI is practically equal)
//   FASTER     lo >  1+t                     (faster by more than t, beyond noise)
//   SLOWER     hi <  1/(1+t)                 (slower by more than t, beyond noise)
//   AMBIGUOUS  anything else (CI straddles a band edge, or too few samples)
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace magpie::stats {

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

// The band rule above, for a CI of a ratio where > 1 means "candidate better".
Verdict classify(double ci_low, double ci_high, double threshold, std::string* reason = nullptr);

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

// --- Any statistics of resampled units (e.g. serving requests) ---------------
//
// A side is `units` records (requests) and a function that computes `k`
// statistics from a multiset of them, given as indices (with repeats). Each
// bootstrap draw resamples both sides' units with replacement and recomputes
// all k statistics at once, so statistics that pool sub-samples (every ITL of
// the drawn requests) resample whole units, as a cluster bootstrap should.
// `resampled` is false for the point estimate (picks = every unit once, in
// order) and true for a draw (picks in random order: any prefix of them is
// itself a smaller resample).
using UnitStatistics =
    std::function<void(std::span<const size_t> picks, bool resampled, std::span<double> out)>;

struct StatisticSide {
  size_t units = 0;
  UnitStatistics compute;
};

struct StatisticSpec {
  bool higher_is_better = false;  // throughput: true; latency: false
};

struct RatioEstimate {
  double baseline = 0;   // the statistic on all baseline units
  double candidate = 0;  // the statistic on all candidate units
  // Oriented so that > 1 means the candidate is better: baseline/candidate for
  // lower-is-better statistics, candidate/baseline for higher-is-better ones.
  double ratio = 0;
  double ci_low = 0;
  double ci_high = 0;
  Verdict verdict = Verdict::kAmbiguous;
  std::string reason;
};

// One estimate per spec; statistics that are not positive on the full data are
// AMBIGUOUS (no ratio). Deterministic for a given seed.
std::vector<RatioEstimate> compare_statistics(const StatisticSide& baseline,
                                              const StatisticSide& candidate,
                                              std::span<const StatisticSpec> specs,
                                              const VerdictSettings& settings = {});

}  // namespace magpie::stats
