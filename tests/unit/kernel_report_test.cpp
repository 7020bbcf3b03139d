// Report schemas (Magpie's field names) and ranking rules.
#include <gtest/gtest.h>

#include <random>

#include "kernel/markdown_table.hpp"
#include "kernel/ranking.hpp"
#include "kernel/report_json.hpp"

namespace magpie::kernel {
namespace {

Evaluation measured(size_t index, const std::string& id, double mean_ns, uint64_t seed) {
  Evaluation e;
  e.index = index;
  e.spec.id = id;
  e.spec.type = KernelType::kCuda;
  e.compiling.state = e.correctness.state = e.performance.state = StageState::kSuccess;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean_ns, mean_ns * 0.003);
  RoundMeasurement r;
  r.source = "latency_json:events";
  for (int i = 0; i < 40; ++i) r.samples_ns.push_back(d(rng));
  e.rounds.push_back(r);
  profiler::KernelRecord k;
  k.name = id;
  k.start_ns = 0;
  k.end_ns = static_cast<int64_t>(mean_ns);
  e.kernels = {k, k};
  return e;
}

Evaluation incorrect(size_t index) {
  Evaluation e;
  e.index = index;
  e.spec.id = "wrong";
  e.compiling.state = StageState::kSuccess;
  e.correctness.state = StageState::kFailed;
  e.correctness.errors = {"`./wrong`: exit 1"};
  e.errors = e.correctness.errors;
  return e;
}

TEST(KernelReport, AnalyzeReportHasMagpieFields) {
  std::vector<Evaluation> evals{measured(0, "vector_add", 250000, 1), incorrect(1)};
  auto j = analyze_report(evals, "2026-12-02T10:00:00");
  EXPECT_EQ(j["mode"], "analyze");
  ASSERT_EQ(j["summary"].size(), 2u);
  for (const char* key : {"kernel_id", "kernel_type", "compiling_state", "correctness_state", "performance_state",
                          "latency_state", "score"}) {
    EXPECT_TRUE(j["summary"][0].contains(key)) << key;
  }
  const auto& r = j["results"][0];
  for (const char* key : {"compiling_state", "correctness_state", "performance_state", "latency_state", "errors",
                          "score", "compiling_result", "correctness_result", "performance_result", "latency_result",
                          "extra"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  const auto& k = r["performance_result"]["kernels"][0];
  EXPECT_EQ(k["kernel_name"], "vector_add");
  EXPECT_EQ(k["dispatch_count"], 2);
  for (const char* key : {"avg", "min", "max", "total"}) EXPECT_TRUE(k["duration_ns"].contains(key)) << key;
  EXPECT_EQ(k["duration_ns"]["total"], 500000);
  EXPECT_EQ(r["extra"]["kernel_id"], "vector_add");
  EXPECT_EQ(j["results"][1]["score"], 0.0);
  EXPECT_EQ(j["results"][1]["correctness_state"], "FAILED");
}

TEST(KernelReport, CompareRanksAndExcludesFailures) {
  std::vector<Evaluation> evals{measured(0, "naive", 1000000, 1), measured(1, "tiled", 400000, 2), incorrect(2),
                                measured(3, "naive_again", 1000000, 4)};
  VerdictSettings vs;
  auto ranking = rank_evaluations(evals, 0, vs);
  EXPECT_EQ(ranking.winner, 1u);
  EXPECT_EQ(*ranking.rows[1].rank, 1u);
  EXPECT_FALSE(ranking.rows[2].rank.has_value());
  EXPECT_NE(ranking.rows[2].reason.find("incorrect"), std::string::npos);
  EXPECT_EQ(ranking.rows[1].vs_baseline->verdict, Verdict::kFaster);
  EXPECT_EQ(ranking.rows[3].vs_baseline->verdict, Verdict::kSame);
  EXPECT_FALSE(ranking.any_regression);
  CuptiChoice serial{"serial", "auto", "no kernels overlapped across streams", 0};
  auto j = compare_report(evals, ranking, vs, serial, "t");
  EXPECT_EQ(j["mode"], "compare");
  const auto& res = j["results"];
  EXPECT_EQ(res["kernel_results"].size(), 4u);
  EXPECT_EQ(res["comparison_metrics"]["correctness"], nlohmann::json({true, true, false, true}));
  EXPECT_EQ(res["comparison_metrics"]["all_correct"], false);
  EXPECT_TRUE(res["comparison_metrics"]["perf_scores"][2].is_null());
  EXPECT_EQ(res["winner"], 1);
  EXPECT_EQ(res["rankings"][0][0], 1);
  EXPECT_EQ(res["rankings"].size(), 3u);
  EXPECT_TRUE(res["summary"].is_string());
  EXPECT_EQ(res["verdicts"][1]["verdict"], "FASTER");
  EXPECT_EQ(res["cupti"]["kind"], "serial");  // the one decision, once for all
  EXPECT_EQ(res["cupti"]["chosen_by"], "auto");
  EXPECT_EQ(res["cupti"]["probe_cross_stream_overlap_ns"], 0);
  auto md = markdown_table(evals, &ranking);
  EXPECT_NE(md.find("| 1 | tiled |"), std::string::npos);
  EXPECT_NE(md.find("not ranked"), std::string::npos);
  EXPECT_NE(md.find("FASTER"), std::string::npos);
}

TEST(KernelReport, SlowerCandidateIsARegressionAndBaselineKeepsTitle) {
  std::vector<Evaluation> evals{measured(0, "base", 100000, 1), measured(1, "worse", 110000, 2)};
  auto ranking = rank_evaluations(evals, 0, {});
  EXPECT_TRUE(ranking.any_regression);
  EXPECT_EQ(ranking.winner, 0u);
  EXPECT_EQ(ranking.rows[1].vs_baseline->verdict, Verdict::kSlower);
}

// A probe round (9 ms, its own source) ahead of two measured rounds.
Evaluation with_probe() {
  Evaluation e = measured(0, "k", 100000, 1);
  e.rounds[0].round = 0;
  e.rounds[0].cupti_kind = "serial";
  RoundMeasurement probe;
  probe.round = -1;
  probe.probe = true;
  probe.source = "cupti_busy_union";
  probe.samples_ns = {9e6};
  probe.cupti_kind = "concurrent";
  probe.cross_stream_overlap_ns = 300;
  RoundMeasurement second = e.rounds[0];
  second.round = 1;
  second.samples_ns.resize(10);
  e.rounds = {probe, e.rounds[0], second};
  e.cupti = {"serial", "auto", "serial chosen because ...", 300};
  return e;
}

TEST(KernelReport, ProbeRoundIsListedButNotSampled) {
  auto e = with_probe();
  EXPECT_EQ(e.samples_ns().size(), 50u);
  for (double ns : e.samples_ns()) EXPECT_LT(ns, 1e6);
  auto by_round = e.samples_by_round();
  ASSERT_EQ(by_round.size(), 2u);
  EXPECT_EQ(by_round[0].size(), 40u);
  EXPECT_EQ(by_round[1].size(), 10u);
  EXPECT_EQ(e.timing_source(), "latency_json:events");  // not the probe's
  auto j = evaluation_state(e);
  const auto& stats = j["performance_result"]["magpie_stats"];
  EXPECT_EQ(stats["samples"]["count"], 50);
  ASSERT_EQ(stats["rounds"].size(), 3u);
  EXPECT_EQ(stats["rounds"][0]["probe"], true);
  EXPECT_EQ(stats["rounds"][0]["cupti_kind"], "concurrent");
  EXPECT_EQ(stats["rounds"][0]["cross_stream_overlap_ns"], 300);
  EXPECT_EQ(stats["rounds"][1]["probe"], false);
  EXPECT_EQ(stats["rounds"][1]["cupti_kind"], "serial");
  EXPECT_EQ(stats["cupti"]["kind"], "serial");
  EXPECT_EQ(stats["cupti"]["chosen_by"], "auto");
  EXPECT_EQ(stats["cupti"]["probe_cross_stream_overlap_ns"], 300);
  EXPECT_TRUE(stats["cupti"]["reason"].is_string());
  // Without the library: kind and probe overlap are null.
  auto plain = evaluation_state(measured(0, "k", 100000, 1))["performance_result"]["magpie_stats"]["cupti"];
  EXPECT_TRUE(plain["kind"].is_null());
  EXPECT_TRUE(plain["probe_cross_stream_overlap_ns"].is_null());
}

}  // namespace
}  // namespace magpie::kernel
