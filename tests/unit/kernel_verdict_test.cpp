#include <gtest/gtest.h>

#include <random>

#include "kernel/verdict.hpp"

namespace magpie::kernel {
namespace {

std::vector<double> normal_samples(std::mt19937_64& rng, double mean, double rel_sd, size_t n) {
  std::normal_distribution<double> d(mean, mean * rel_sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// 1,000 A/A trials under 0.5% noise: the rule must call them SAME at least 99% of the time.
TEST(Verdict, IdenticalDistributionsAreSame) {
  std::mt19937_64 rng(7);
  VerdictSettings s;  // ±2%, 2000 resamples, fixed seed
  int same = 0;
  for (int t = 0; t < 1000; ++t) {
    auto a = normal_samples(rng, 100.0, 0.005, 30), b = normal_samples(rng, 100.0, 0.005, 30);
    s.seed = static_cast<uint64_t>(t);
    same += compare_samples(a, b, s).verdict == Verdict::kSame;
  }
  EXPECT_GE(same, 990);
}

TEST(Verdict, ThreePercentShiftUnderHalfPercentNoise) {
  std::mt19937_64 rng(11);
  int right_fast = 0, right_slow = 0;
  for (int t = 0; t < 100; ++t) {
    auto base = normal_samples(rng, 100.0, 0.005, 30);
    auto faster = normal_samples(rng, 97.0, 0.005, 30);
    auto slower = normal_samples(rng, 103.0, 0.005, 30);
    auto f = compare_samples(base, faster);
    auto sl = compare_samples(base, slower);
    right_fast += f.verdict == Verdict::kFaster;
    right_slow += sl.verdict == Verdict::kSlower;
    EXPECT_GT(f.speedup, 1.0);
    EXPECT_LE(f.ci_low, f.speedup);
    EXPECT_GE(f.ci_high, f.speedup);
  }
  EXPECT_GE(right_fast, 99);
  EXPECT_GE(right_slow, 99);
}

TEST(Verdict, NoiseWiderThanTheBandIsAmbiguousNotFaster) {
  std::mt19937_64 rng(3);
  auto base = normal_samples(rng, 100.0, 0.08, 8), cand = normal_samples(rng, 100.0, 0.08, 8);
  EXPECT_EQ(compare_samples(base, cand).verdict, Verdict::kAmbiguous);
  std::vector<double> two{1.0, 1.0};
  auto few = compare_samples(two, two);
  EXPECT_EQ(few.verdict, Verdict::kAmbiguous);
  EXPECT_NE(few.reason.find("too few"), std::string::npos);
}

TEST(Verdict, DeterministicForASeed) {
  std::mt19937_64 rng(5);
  auto a = normal_samples(rng, 10, 0.02, 20), b = normal_samples(rng, 10.2, 0.02, 20);
  auto x = compare_samples(a, b), y = compare_samples(a, b);
  EXPECT_EQ(x.ci_low, y.ci_low);
  EXPECT_EQ(x.ci_high, y.ci_high);
  EXPECT_DOUBLE_EQ(median_of(std::vector<double>{3, 1, 2, 10}), 2.5);
}

}  // namespace
}  // namespace magpie::kernel
