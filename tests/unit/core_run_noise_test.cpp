// The run-to-run rule (core/run_noise.hpp): how a within-run verdict becomes a
// verdict between runs.
#include "core/run_noise.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace magpie::stats {
namespace {

TEST(RunNoise, SpreadIsTheLargestRatioBetweenRuns) {
  std::vector<double> two{74.59, 54.25};  // the A/A pair of docs/OPTIMIZATION_LOOP.md (req/s)
  EXPECT_NEAR(run_spread(two), 74.59 / 54.25, 1e-12);
  std::vector<double> three{10, 12, 11};
  EXPECT_DOUBLE_EQ(run_spread(three), 1.2);
  std::vector<double> one{5};
  EXPECT_DOUBLE_EQ(run_spread(one), 1.0);
  std::vector<double> zeros{0, 4, 0};  // a statistic a run could not compute says nothing
  EXPECT_DOUBLE_EQ(run_spread(zeros), 1.0);
}

// One run a side: the bootstrap's FASTER/SLOWER are not confirmed; SAME and AMBIGUOUS stand.
TEST(RunNoise, OneRunASideIsUnconfirmed) {
  RunNoise unknown;  // kWithinRunOnly
  // The reported case: two identical CPU runs, throughput ratio 0.727, CI [0.635, 0.836].
  auto slower = apply_run_noise(Verdict::kSlower, 0.635, 0.836, "CI below -5.0%", unknown, 0.05);
  EXPECT_EQ(slower.verdict, Verdict::kAmbiguous);
  EXPECT_NE(slower.reason.find("unconfirmed"), std::string::npos) << slower.reason;
  EXPECT_NE(slower.reason.find("re-run to measure run-to-run noise"), std::string::npos);
  EXPECT_NE(slower.reason.find("SLOWER"), std::string::npos);  // what the bootstrap alone said
  EXPECT_DOUBLE_EQ(slower.ci_low, 0.635);
  auto faster = apply_run_noise(Verdict::kFaster, 1.9, 2.1, "x", unknown, 0.05);
  EXPECT_EQ(faster.verdict, Verdict::kAmbiguous);
  auto same = apply_run_noise(Verdict::kSame, 0.99, 1.01, "CI within", unknown, 0.05);
  EXPECT_EQ(same.verdict, Verdict::kSame);
  EXPECT_NE(same.reason.find("within-run only"), std::string::npos);
  EXPECT_EQ(apply_run_noise(Verdict::kAmbiguous, 0.9, 1.2, "x", unknown, 0.05).verdict,
            Verdict::kAmbiguous);
}

TEST(RunNoise, AnEffectBeyondTheNoiseFloorStands) {
  RunNoise repeats{NoiseBasis::kRepeats, 1.10};
  auto v = apply_run_noise(Verdict::kFaster, 1.9, 2.1, "CI above +5.0%", repeats, 0.05);
  EXPECT_EQ(v.verdict, Verdict::kFaster) << v.reason;
  EXPECT_NEAR(v.ci_low, 1.9 / 1.1, 1e-12);
  EXPECT_NEAR(v.ci_high, 2.1 * 1.1, 1e-12);
  EXPECT_NE(v.reason.find("beyond run-to-run noise x1.100"), std::string::npos) << v.reason;
  auto s = apply_run_noise(Verdict::kSlower, 0.45, 0.55, "CI below", repeats, 0.05);
  EXPECT_EQ(s.verdict, Verdict::kSlower);
}

// The A/A pair of the report: the floor is the pair's own ratio, so it can never be called a
// difference.
TEST(RunNoise, AnAaPairIsNeverADifference) {
  const double ratio = 54.25 / 74.59;
  RunNoise aa{NoiseBasis::kAaPair, 1 / ratio};
  auto v = apply_run_noise(Verdict::kSlower, 0.635, 0.836, "CI below -5.0%", aa, 0.05);
  EXPECT_EQ(v.verdict, Verdict::kAmbiguous);
  EXPECT_NE(v.reason.find("SLOWER within runs, but run-to-run noise"), std::string::npos)
      << v.reason;
}

TEST(RunNoise, NoiseLargerThanTheEffectMakesItAmbiguous) {
  // Candidate 10% faster within runs, but repeats of one config differ by 30%.
  auto v = apply_run_noise(Verdict::kFaster, 1.08, 1.12, "CI above", {NoiseBasis::kRepeats, 1.3},
                           0.05);
  EXPECT_EQ(v.verdict, Verdict::kAmbiguous);
  // A SAME within runs is not SAME when runs drift more than the band.
  auto s = apply_run_noise(Verdict::kSame, 0.99, 1.01, "CI within", {NoiseBasis::kGiven, 1.3},
                           0.05);
  EXPECT_EQ(s.verdict, Verdict::kAmbiguous);
  // ... and stays SAME when they drift less.
  EXPECT_EQ(apply_run_noise(Verdict::kSame, 0.995, 1.005, "CI within", {NoiseBasis::kGiven, 1.02},
                            0.05)
                .verdict,
            Verdict::kSame);
}

// Widening only demotes: over a grid of CIs and floors the result is the within-run verdict or
// AMBIGUOUS, never the opposite direction, and a larger floor never promotes.
TEST(RunNoise, WideningNeverFlipsADirection) {
  int demoted = 0;
  for (double lo = 0.3; lo < 3; lo *= 1.07)
    for (double width = 1.0; width < 1.6; width *= 1.05) {
      const double hi = lo * width;
      const Verdict within = classify(lo, hi, 0.05);
      Verdict previous = within;
      for (double f = 1.0; f < 2.5; f *= 1.04) {
        auto v = apply_run_noise(within, lo, hi, "", {NoiseBasis::kRepeats, f}, 0.05);
        ASSERT_TRUE(v.verdict == within || v.verdict == Verdict::kAmbiguous)
            << to_string(within) << " -> " << to_string(v.verdict);
        ASSERT_TRUE(previous == v.verdict || v.verdict == Verdict::kAmbiguous);
        demoted += v.verdict != within;
        previous = v.verdict;
      }
    }
  EXPECT_GT(demoted, 100);  // the grid does reach floors that matter
}

}  // namespace
}  // namespace magpie::stats
