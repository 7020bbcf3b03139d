// Paired accuracy (core/paired_accuracy.hpp): the exact McNemar test and its
// conditional Clopper-Pearson CI, on counts whose answers are computed by hand
// (binomial sums of 1/2^m; the one-sided bound of c = 0 is 1 - (alpha/2)^(1/m)).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/paired_accuracy.hpp"

namespace magpie::stats {
namespace {

TEST(PairedAccuracy, BinomialCdfMatchesHandSums) {
  EXPECT_NEAR(binomial_cdf(2, 4, 0.5), 11.0 / 16, 1e-12);  // (1 + 4 + 6) / 16
  EXPECT_NEAR(binomial_cdf(0, 3, 0.2), 0.512, 1e-12);      // 0.8^3
  EXPECT_DOUBLE_EQ(binomial_cdf(4, 4, 0.3), 1);
}

TEST(PairedAccuracy, AllConcordantIsSameWithZeroWidth) {
  auto r = compare_paired_accuracy({.both_right = 50, .both_wrong = 10});
  EXPECT_EQ(r.verdict, QualityVerdict::kSame);
  EXPECT_DOUBLE_EQ(r.difference, 0);
  EXPECT_DOUBLE_EQ(r.ci_low, 0);
  EXPECT_DOUBLE_EQ(r.ci_high, 0);
  EXPECT_DOUBLE_EQ(r.p_value, 1);
  EXPECT_NEAR(r.baseline_accuracy, 50.0 / 60, 1e-12);
}

TEST(PairedAccuracy, ThirtyDiscordantAllLostIsWorse) {
  auto r = compare_paired_accuracy({.both_right = 40, .both_wrong = 30, .baseline_only = 30});
  EXPECT_EQ(r.verdict, QualityVerdict::kWorse);
  EXPECT_NEAR(r.difference, -0.30, 1e-12);
  EXPECT_NEAR(r.p_value, 2 * std::pow(0.5, 30), 1e-15);
  // c = 0: pL = 0, pU = 1 - 0.025^(1/30); the difference is 30/100 * (2p - 1).
  double p_high = 1 - std::pow(0.025, 1.0 / 30);
  EXPECT_NEAR(r.ci_low, -0.30, 1e-9);
  EXPECT_NEAR(r.ci_high, 0.30 * (2 * p_high - 1), 1e-9);
  EXPECT_NEAR(r.baseline_accuracy, 0.70, 1e-12);
  EXPECT_NEAR(r.candidate_accuracy, 0.40, 1e-12);
}

TEST(PairedAccuracy, ThirtyDiscordantAllGainedIsBetter) {
  auto r = compare_paired_accuracy({.both_right = 40, .both_wrong = 30, .candidate_only = 30});
  EXPECT_EQ(r.verdict, QualityVerdict::kBetter);
  double p_low = std::pow(0.025, 1.0 / 30);
  EXPECT_NEAR(r.ci_low, 0.30 * (2 * p_low - 1), 1e-9);
  EXPECT_NEAR(r.ci_high, 0.30, 1e-9);
}

TEST(PairedAccuracy, VerdictAndCiAgreeAtTheEdgeOfSignificance) {
  // Five lost, none gained: p = 2/32 = 0.0625 > 0.05, SAME; the CI reaches above 0.
  auto five = compare_paired_accuracy({.both_right = 95, .baseline_only = 5});
  EXPECT_NEAR(five.p_value, 0.0625, 1e-12);
  EXPECT_EQ(five.verdict, QualityVerdict::kSame);
  EXPECT_GT(five.ci_high, 0);
  // Six: p = 2/64 = 0.03125 < 0.05, WORSE; the CI is below 0.
  auto six = compare_paired_accuracy({.both_right = 94, .baseline_only = 6});
  EXPECT_NEAR(six.p_value, 0.03125, 1e-12);
  EXPECT_EQ(six.verdict, QualityVerdict::kWorse);
  EXPECT_LT(six.ci_high, 0);
}

TEST(PairedAccuracy, MixedDiscordantPairsUseTheSmallerTail) {
  // b = 10, c = 2: p = 2 * (1 + 12 + 66) / 4096.
  auto r = compare_paired_accuracy({.both_right = 80, .both_wrong = 8, .baseline_only = 10, .candidate_only = 2});
  EXPECT_NEAR(r.p_value, 158.0 / 4096, 1e-12);
  EXPECT_EQ(r.verdict, QualityVerdict::kWorse);
  EXPECT_NEAR(r.difference, -0.08, 1e-12);
  EXPECT_LT(r.ci_low, r.difference);
  EXPECT_GT(r.ci_high, r.difference);
  // Balanced discordance: no difference, a CI symmetric around 0.
  auto even = compare_paired_accuracy({.both_right = 80, .baseline_only = 10, .candidate_only = 10});
  EXPECT_EQ(even.verdict, QualityVerdict::kSame);
  EXPECT_DOUBLE_EQ(even.p_value, 1);
  EXPECT_NEAR(even.ci_low, -even.ci_high, 1e-9);
}

TEST(PairedAccuracy, NoPairsIsAUsageError) {
  try {
    compare_paired_accuracy({});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
  EXPECT_THROW(compare_paired_accuracy({.both_right = 1}, 1.0), Error);
}

}  // namespace
}  // namespace magpie::stats
