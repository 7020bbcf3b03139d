#pragma once
// Two runs answered the same items: did the candidate's accuracy change?
// Each item is a pair of outcomes (right/wrong in the baseline, in the
// candidate). Concordant pairs (both right, both wrong) say nothing about a
// difference; the discordant ones do: b items only the baseline got right, c
// items only the candidate got right. Under "no change" each discordant pair
// is a fair coin, so the exact McNemar test is a two-sided binomial test of c
// out of m = b + c at p = 1/2.
//
// The accuracy difference (candidate - baseline) is (c - b) / n for n pairs.
// Its CI is conditional on m: the Clopper-Pearson interval [pL, pU] of c/m maps
// to m/n * (2p - 1). That interval excludes 0 exactly when the test rejects at
// 1 - confidence, so verdict and CI never disagree:
//   WORSE   ci_high < 0    BETTER   ci_low > 0    SAME   otherwise
// SAME means "no change this many items can show", not "equal": the CI says how
// large a change could still hide. No discordant pair: difference 0, CI [0, 0].
#include <cstddef>
#include <string>

namespace magpie::stats {

enum class QualityVerdict { kBetter, kSame, kWorse };
const char* to_string(QualityVerdict v);

struct PairedCounts {
  size_t both_right = 0;
  size_t both_wrong = 0;
  size_t baseline_only = 0;   // b: right in the baseline, wrong in the candidate
  size_t candidate_only = 0;  // c: wrong in the baseline, right in the candidate
  size_t pairs() const { return both_right + both_wrong + baseline_only + candidate_only; }
};

struct PairedAccuracy {
  PairedCounts counts;
  double baseline_accuracy = 0;
  double candidate_accuracy = 0;
  double difference = 0;  // candidate - baseline, a fraction (0.1 = 10 points)
  double ci_low = 0, ci_high = 0;
  double p_value = 1;  // exact two-sided McNemar
  double confidence = 0.95;
  QualityVerdict verdict = QualityVerdict::kSame;
  std::string reason;
};

// Throws Error(kUsage) for no pairs or a confidence outside (0, 1).
PairedAccuracy compare_paired_accuracy(const PairedCounts& counts, double confidence = 0.95);

// P(X <= k) for X ~ Binomial(n, p); exposed for tests.
double binomial_cdf(size_t k, size_t n, double p);

}  // namespace magpie::stats
