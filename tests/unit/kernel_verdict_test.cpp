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

// Rounds of `per_round` samples around the given centres, with `rel_sd` noise within each round.
std::vector<std::vector<double>> rounds_at(std::mt19937_64& rng, std::initializer_list<double> centres, double rel_sd,
                                           size_t per_round) {
  std::vector<std::vector<double>> out;
  for (double c : centres) out.push_back(normal_samples(rng, c, rel_sd, per_round));
  return out;
}

std::vector<double> pool(const std::vector<std::vector<double>>& rounds) {
  std::vector<double> all;
  for (const auto& r : rounds) all.insert(all.end(), r.begin(), r.end());
  return all;
}

TEST(Verdict, UngroupedIsOneRound) {
  std::mt19937_64 rng(5);
  auto a = normal_samples(rng, 10, 0.02, 20), b = normal_samples(rng, 10.2, 0.02, 20);
  std::vector<std::vector<double>> ra{a}, rb{b, {}};  // an empty round is ignored
  auto flat = compare_samples(a, b), grouped = compare_samples(ra, rb);
  EXPECT_EQ(flat.ci_low, grouped.ci_low);
  EXPECT_EQ(flat.ci_high, grouped.ci_high);
  EXPECT_EQ(flat.speedup, grouped.speedup);
}

// A/A with 5 rounds of 20 samples each, no drift between rounds: SAME in at least 99% of 200 trials.
TEST(Verdict, RoundsWithIdenticalDistributionsAreSame) {
  std::mt19937_64 rng(17);
  VerdictSettings s;
  int same = 0;
  for (int t = 0; t < 200; ++t) {
    auto a = rounds_at(rng, {100, 100, 100, 100, 100}, 0.005, 20);
    auto b = rounds_at(rng, {100, 100, 100, 100, 100}, 0.005, 20);
    s.seed = static_cast<uint64_t>(t);
    same += compare_samples(a, b, s).verdict == Verdict::kSame;
  }
  EXPECT_GE(same, 198);
}

// The baseline drifted to 103 in one of its three rounds; the candidate sat at 101.5 throughout.
// Pooling treats 150 tight samples as independent and gets a narrow CI; resampling rounds shows
// that which rounds you happened to get moves the answer by ~3%.
TEST(Verdict, DriftBetweenRoundsWidensTheCi) {
  std::mt19937_64 rng(23);
  auto base = rounds_at(rng, {100, 103, 100}, 0.0005, 50);
  auto cand = rounds_at(rng, {101.5, 101.5, 101.5}, 0.0005, 50);
  auto pooled = compare_samples(pool(base), pool(cand));
  auto grouped = compare_samples(base, cand);
  EXPECT_DOUBLE_EQ(grouped.speedup, pooled.speedup);  // same point estimate
  double pooled_width = pooled.ci_high - pooled.ci_low, grouped_width = grouped.ci_high - grouped.ci_low;
  EXPECT_GT(grouped_width, 10 * pooled_width) << pooled_width << " vs " << grouped_width;
  EXPECT_GT(grouped_width, 0.02);
  EXPECT_NE(grouped.verdict, Verdict::kFaster);
  EXPECT_NE(grouped.verdict, Verdict::kSlower);
  // The same drift, larger: pooling calls a false regression, rounds say it is not known.
  auto base6 = rounds_at(rng, {100, 106, 100}, 0.0005, 50);
  auto cand6 = rounds_at(rng, {103, 103, 103}, 0.0005, 50);
  EXPECT_EQ(compare_samples(pool(base6), pool(cand6)).verdict, Verdict::kSlower);
  EXPECT_EQ(compare_samples(base6, cand6).verdict, Verdict::kAmbiguous);
}

// A real 3% shift, consistent across 5 rounds that drift ±0.3% between them, is still found.
TEST(Verdict, ConsistentShiftAcrossRoundsIsFound) {
  std::mt19937_64 rng(29);
  std::normal_distribution<double> drift(1.0, 0.003);
  auto drifting = [&](double centre) {
    std::vector<std::vector<double>> rounds;
    for (int r = 0; r < 5; ++r) rounds.push_back(normal_samples(rng, centre * drift(rng), 0.005, 30));
    return rounds;
  };
  int right_fast = 0, right_slow = 0;
  for (int t = 0; t < 50; ++t) {
    auto base = drifting(100), faster = drifting(97), slower = drifting(103);
    auto f = compare_samples(base, faster);
    right_fast += f.verdict == Verdict::kFaster;
    right_slow += compare_samples(base, slower).verdict == Verdict::kSlower;
    EXPECT_LE(f.ci_low, f.speedup);
    EXPECT_GE(f.ci_high, f.speedup);
  }
  EXPECT_GE(right_fast, 49);
  EXPECT_GE(right_slow, 49);
}

TEST(Verdict, GroupedCountsAllSamplesAndIsDeterministic) {
  std::vector<std::vector<double>> two_by_two{{1.0, 1.1}, {1.0, 1.1}}, one_by_two{{1.0, 1.1}};
  EXPECT_EQ(compare_samples(two_by_two, two_by_two).reason.find("too few"), std::string::npos);
  EXPECT_NE(compare_samples(one_by_two, two_by_two).reason.find("too few"), std::string::npos);
  std::mt19937_64 rng(31);
  auto a = rounds_at(rng, {10, 10.1, 9.9}, 0.02, 15), b = rounds_at(rng, {10.2, 10.1, 10.3}, 0.02, 15);
  auto x = compare_samples(a, b), y = compare_samples(a, b);
  EXPECT_EQ(x.ci_low, y.ci_low);
  EXPECT_EQ(x.ci_high, y.ci_high);
  VerdictSettings other;
  other.seed = 43;
  EXPECT_NE(compare_samples(a, b, other).ci_low, x.ci_low);
}

}  // namespace
}  // namespace magpie::kernel
