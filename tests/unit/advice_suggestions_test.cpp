#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "advice/rules.hpp"
#include "advice/suggestions.hpp"
#include "analysis/gap_analysis_report.hpp"
#include "analysis/gap_analysis_run.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::advice {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kData = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/advice";
const fs::path kDecodeCsv =
    kData /
    "tracelens_llama_h200/decode_only_ISLunknown_OSLunknown_CONCunknown_kernel_roofline_simple.csv";

json load_json(const fs::path& p) { return json::parse(read_file(p).view()); }

bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

const Bottleneck* first_of(const Advice& a, BottleneckKind kind) {
  for (const auto& b : a.bottlenecks) {
    if (b.kind == kind) return &b;
  }
  return nullptr;
}

bool has_title(const Advice& a, const std::string& title) {
  return std::any_of(a.suggestions.begin(), a.suggestions.end(),
                     [&](const auto& s) { return s.title == title; });
}

// An EvaluationState shaped as src/kernel/report_json.cpp writes it; the
// figures of `vector_add` on the H200 (docs/gpu_validation/run1_validation.log).
json vector_add_state() {
  return json::parse(R"json({
    "compiling_state": "SUCCESS", "correctness_state": "SUCCESS", "performance_state": "SUCCESS",
    "latency_state": "SUCCESS", "errors": [], "score": 1.0,
    "compiling_result": {"success": true, "errors": []},
    "correctness_result": {"success": true, "errors": [], "scope": "testcase exit status"},
    "performance_result": {
      "success": true, "errors": [], "command": "./vector_add 50", "workload_dir": "/tmp/ws",
      "summary": {
        "achieved_tbps": {"pct_of_peak": 71.74752057884814, "peak": 4.8, "unit": "TB/s", "value": 3.4438809877847105},
        "achieved_tflops": {"unit": "TFLOP/s", "value": 0.29143706833057714},
        "dram_bytes": {"unit": "bytes", "value": 7930183424.0},
        "flops": {"unit": "flop", "value": 671088640.0},
        "gpu_time_duration_sum": {"unit": "ns", "value": 2302688.0},
        "median_time": {"unit": "us", "value": 250.736},
        "roofline_floor": {"unit": "us", "value": 167.77216}
      },
      "kernels": [{"kernel_name": "vector_add(float const*, float const*, float*, unsigned long)",
                   "dispatch_count": 162, "duration_ns": {"avg": 248732, "min": 247000, "max": 251000, "total": 40294584}}]
    },
    "latency_result": null,
    "extra": {"kernel_id": "vector_add", "kernel_type": "cuda"}
  })json");
}

// matmul_tiled on the H200: 9.31 TFLOP/s fp32, 229 MB of DRAM traffic in 9.23 ms.
json matmul_state() {
  json s = vector_add_state();
  s["extra"]["kernel_id"] = "matmul_tiled";
  auto& sum = s["performance_result"]["summary"];
  sum["achieved_tbps"] = {{"pct_of_peak", 0.516863129753442},
                          {"peak", 4.8},
                          {"unit", "TB/s"},
                          {"value", 0.024809430228165216}};
  sum["achieved_tflops"] = {{"unit", "TFLOP/s"}, {"value", 9.308452060349579}};
  sum["dram_bytes"] = {{"unit", "bytes"}, {"value", 229055744.0}};
  sum["flops"] = {{"unit", "flop"}, {"value", 85941502361.6}};
  sum["median_time"] = {{"unit", "us"}, {"value", 1846.176}};
  return s;
}

// ---- analyze results -------------------------------------------------------

TEST(AdviceAnalyze, MemoryBoundNearTheRoofSaysMoveFewerBytes) {
  auto a = suggest_optimizations(vector_add_state());
  EXPECT_EQ(a.source_kind, "analyze_result");
  EXPECT_EQ(a.kernel_id, "vector_add");
  EXPECT_DOUBLE_EQ(a.overall_score, 1.0);  // the result's own score
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  const auto& b = a.bottlenecks[0];
  EXPECT_EQ(b.kind, BottleneckKind::kMemoryBound);
  EXPECT_NEAR(b.severity, 1 - 0.7174752, 1e-6);
  EXPECT_TRUE(contains(b.evidence, "achieved 3.44 TB/s of 4.8 TB/s peak (72%)")) << b.evidence;
  EXPECT_TRUE(contains(b.evidence, "AI 0.0846 FLOP/B below every known GPU's fp32 ridge"))
      << b.evidence;
  EXPECT_NEAR(b.figures.at("arithmetic_intensity"), 671088640.0 / 7930183424.0, 1e-12);
  ASSERT_FALSE(a.suggestions.empty());
  EXPECT_EQ(a.suggestions[0].title, "Move fewer bytes: fuse with neighbouring ops");
  EXPECT_EQ(a.suggestions[0].priority, 1);
  EXPECT_EQ(a.suggestions[0].applies_to, "vector_add");
}

TEST(AdviceAnalyze, MemoryBoundFarFromTheRoofSaysCoalesce) {
  auto s = vector_add_state();
  s["performance_result"]["summary"]["achieved_tbps"]["value"] = 1.2;
  s["performance_result"]["summary"]["achieved_tbps"]["pct_of_peak"] = 25.0;
  auto a = suggest_optimizations(s);
  ASSERT_EQ(a.bottlenecks.at(0).kind, BottleneckKind::kMemoryBound);
  EXPECT_NEAR(a.bottlenecks[0].severity, 0.75, 1e-12);
  EXPECT_EQ(a.suggestions.at(0).title, "Coalesce and vectorize memory accesses");
  EXPECT_FALSE(has_title(a, "Move fewer bytes: fuse with neighbouring ops"));
}

TEST(AdviceAnalyze, PctOfPeakAndPeakEachFollowFromTheOther) {
  auto s = vector_add_state();
  s["performance_result"]["summary"]["achieved_tbps"].erase("pct_of_peak");
  s["performance_result"]["summary"]["achieved_tbps"]["value"] = 2.4;  // of 4.8
  EXPECT_NEAR(suggest_optimizations(s).bottlenecks.at(0).figures.at("pct_of_roof"), 50, 1e-9);
  s = vector_add_state();
  s["performance_result"]["summary"]["achieved_tbps"].erase("peak");
  s["performance_result"]["summary"]["achieved_tbps"]["value"] = 1.2;
  s["performance_result"]["summary"]["achieved_tbps"]["pct_of_peak"] = 25.0;
  EXPECT_NEAR(suggest_optimizations(s).bottlenecks.at(0).figures.at("peak_tbps"), 4.8, 1e-9);
}

TEST(AdviceAnalyze, HighIntensityWithoutAComputePeakIsComputeBoundWithUnknownHeadroom) {
  auto a = suggest_optimizations(matmul_state());
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  const auto& b = a.bottlenecks[0];
  EXPECT_EQ(b.kind, BottleneckKind::kComputeBound);
  EXPECT_DOUBLE_EQ(b.severity, 0.5);  // kUnknownHeadroomSeverity
  EXPECT_TRUE(contains(b.evidence, "achieved 9.31 TFLOP/s (compute peak unknown")) << b.evidence;
  EXPECT_TRUE(contains(b.evidence, "above every known GPU's fp32 ridge")) << b.evidence;
  EXPECT_EQ(a.suggestions.at(0).title, "Use tensor cores / matrix cores");
}

TEST(AdviceAnalyze, ComputePeakGivesTheRidgeAndTheHeadroom) {
  auto s = matmul_state();
  s["performance_result"]["summary"]["achieved_tflops"]["peak"] = 67.0;  // H200 fp32
  auto a = suggest_optimizations(s);
  const auto& b = a.bottlenecks.at(0);
  EXPECT_EQ(b.kind, BottleneckKind::kComputeBound);
  EXPECT_NEAR(b.figures.at("pct_of_roof"), 100 * 9.308452060349579 / 67, 1e-9);
  EXPECT_NEAR(b.severity, 1 - 9.308452060349579 / 67, 1e-9);
  EXPECT_NEAR(b.figures.at("ridge_flop_per_byte"), 67 / 4.8, 1e-9);
  EXPECT_TRUE(contains(b.evidence, "above ridge 14 FLOP/B")) << b.evidence;
  // Near the compute roof the advice changes to precision and fewer FLOPs.
  s["performance_result"]["summary"]["achieved_tflops"]["value"] = 60.0;
  a = suggest_optimizations(s);
  EXPECT_EQ(a.suggestions.at(0).title, "Use lower precision");
  EXPECT_FALSE(has_title(a, "Use tensor cores / matrix cores"));
}

TEST(AdviceAnalyze, FarBelowBothRoofsIsLatencyOrOccupancy) {
  auto s = vector_add_state();
  s["performance_result"]["summary"]["achieved_tbps"]["value"] = 0.3;
  s["performance_result"]["summary"]["achieved_tbps"]["pct_of_peak"] = 6.25;
  auto a = suggest_optimizations(s);
  const auto& b = a.bottlenecks.at(0);
  EXPECT_EQ(b.kind, BottleneckKind::kLowOccupancyOrLatency);
  EXPECT_NEAR(b.severity, 0.9375, 1e-12);
  EXPECT_TRUE(
      contains(b.evidence, "memory-bound by arithmetic intensity but only 6.2% of that roof"))
      << b.evidence;
  EXPECT_EQ(a.suggestions.at(0).title, "Expose more parallelism");
  // Just above the threshold it is memory-bound again.
  s["performance_result"]["summary"]["achieved_tbps"]["value"] = 0.5;
  s["performance_result"]["summary"]["achieved_tbps"]["pct_of_peak"] = 100 * 0.5 / 4.8;
  EXPECT_EQ(suggest_optimizations(s).bottlenecks.at(0).kind, BottleneckKind::kMemoryBound);
}

TEST(AdviceAnalyze, ShortCallsAreLaunchBound) {
  auto s = vector_add_state();
  s["performance_result"]["summary"]["median_time"]["value"] = 3.0;
  auto a = suggest_optimizations(s);
  const auto* b = first_of(a, BottleneckKind::kLaunchBound);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->severity, (kLaunchCostUs - 3) / kLaunchCostUs,
              1e-12);  // 0.7: ranks above memory (0.28)
  EXPECT_EQ(a.bottlenecks.at(0).kind, BottleneckKind::kLaunchBound);
  EXPECT_TRUE(contains(b->evidence, "mean 3 µs")) << b->evidence;
  EXPECT_EQ(a.suggestions.at(0).title, "Capture the launches in a CUDA/HIP graph");
  // A call as long as one launch costs is not launch-bound.
  s["performance_result"]["summary"]["median_time"]["value"] = kLaunchCostUs;
  EXPECT_EQ(first_of(suggest_optimizations(s), BottleneckKind::kLaunchBound), nullptr);
  // The severity floor (0.05): 9.6 µs waits 4% of the time, 9.4 µs 6%.
  s["performance_result"]["summary"]["median_time"]["value"] = 9.6;
  EXPECT_EQ(first_of(suggest_optimizations(s), BottleneckKind::kLaunchBound), nullptr);
  s["performance_result"]["summary"]["median_time"]["value"] = 9.4;
  EXPECT_NE(first_of(suggest_optimizations(s), BottleneckKind::kLaunchBound), nullptr);
}

TEST(AdviceAnalyze, FailedCorrectnessComesFirstAndAlone) {
  auto s = vector_add_state();
  s["correctness_state"] = "FAILED";
  s["performance_state"] = "SKIPPED";
  s["score"] = 0.0;
  s["correctness_result"]["errors"] = {"`./vector_add 20`: exit 1; see correctness.log"};
  auto a = suggest_optimizations(s);
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  EXPECT_EQ(a.bottlenecks[0].kind, BottleneckKind::kCorrectnessFailure);
  EXPECT_DOUBLE_EQ(a.bottlenecks[0].severity, 1.0);
  EXPECT_TRUE(
      contains(a.bottlenecks[0].evidence, "correctness_state FAILED: `./vector_add 20`: exit 1"))
      << a.bottlenecks[0].evidence;
  ASSERT_EQ(a.suggestions.size(), 1u);
  EXPECT_EQ(a.suggestions[0].title, "Fix correctness before tuning");
  EXPECT_DOUBLE_EQ(a.overall_score, 0.0);
  // Even when performance figures are present, they are not interpreted.
  s["performance_state"] = "SUCCESS";
  EXPECT_EQ(suggest_optimizations(s).bottlenecks.size(), 1u);

  auto c = vector_add_state();
  c["compiling_state"] = "FAILED";
  c["compiling_result"]["errors"] = {"nvcc: error: expected ';'"};
  auto ca = suggest_optimizations(c);
  EXPECT_EQ(ca.bottlenecks.at(0).subject, "compile");
  EXPECT_EQ(ca.suggestions.at(0).title, "Fix the build first");
  EXPECT_TRUE(contains(ca.suggestions[0].detail, "expected ';'"));
}

TEST(AdviceAnalyze, MissingFiguresAreNoData) {
  auto s = vector_add_state();
  s["performance_state"] = "SKIPPED";
  auto a = suggest_optimizations(s);
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  EXPECT_EQ(a.bottlenecks[0].kind, BottleneckKind::kNoData);
  EXPECT_TRUE(contains(a.bottlenecks[0].evidence, "performance_state SKIPPED"));
  EXPECT_EQ(a.suggestions.at(0).title, "Measure bytes and FLOPs");

  // Timed but no ncu pass: no bytes, no FLOPs.
  s = vector_add_state();
  auto& sum = s["performance_result"]["summary"];
  for (const char* k :
       {"achieved_tbps", "achieved_tflops", "dram_bytes", "flops", "gpu_time_duration_sum"})
    sum.erase(k);
  a = suggest_optimizations(s);
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  EXPECT_EQ(a.bottlenecks[0].kind, BottleneckKind::kNoData);
  EXPECT_TRUE(contains(a.bottlenecks[0].evidence, "no bytes or FLOPs"))
      << a.bottlenecks[0].evidence;

  // An intensity between the known ridges cannot be placed without a compute peak.
  s = vector_add_state();
  s["performance_result"]["summary"]["flops"]["value"] = 7930183424.0 * 12;  // AI 12
  a = suggest_optimizations(s);
  ASSERT_EQ(a.bottlenecks.at(0).kind, BottleneckKind::kNoData);
  EXPECT_TRUE(contains(a.bottlenecks[0].evidence, "lies between")) << a.bottlenecks[0].evidence;
}

TEST(AdviceAnalyze, WholeReportsAreRefusedWithDirections) {
  json analyze_report{{"mode", "analyze"},
                      {"timestamp", "t"},
                      {"summary", json::array()},
                      {"results", json::array({vector_add_state()})}};
  json compare_report{
      {"mode", "compare"},
      {"summary", json::array()},
      {"results", {{"kernel_results", json::array({vector_add_state()})}, {"winner", 0}}}};
  for (const auto& [report, needle] : {std::pair{analyze_report, "analyze_report.json"},
                                       std::pair{compare_report, "compare_report.json"}}) {
    try {
      suggest_optimizations(report);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
      EXPECT_TRUE(contains(e.what(), needle)) << e.what();
      EXPECT_TRUE(contains(e.what(), "pass one entry of its `results`")) << e.what();
    }
  }
  for (const json& bad :
       {json::parse(R"({"hello": 1})"), json(42), json::parse(R"([{"no_op_name": 1}])"),
        json::parse(R"({"rows": {"op_name": "x"}})")}) {
    try {
      suggest_optimizations(bad);
      ADD_FAILURE() << "no error for " << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadFormat) << e.what();
    }
  }
}

// ---- gap reports -----------------------------------------------------------

json timeline_block(double span, double idle, double exposed_comm) {
  return json{{"total_duration_us", span - idle},
              {"top_kernels", json::array()},
              {"ranks", json::array({{{"rank", 0},
                                      {"timeline",
                                       {{"span_us", span},
                                        {"busy_us", span - idle},
                                        {"idle_us", idle},
                                        {"computation_us", span - idle - exposed_comm},
                                        {"exposed_communication_us", exposed_comm}}},
                                      {"links", {{"gpu_events", 10}, {"graph_kernels", 0}}}}})}};
}

TEST(AdviceGap, ExposedCommunicationThreshold) {
  auto below = suggest_optimizations(timeline_block(1000, 0, 49.9));
  EXPECT_EQ(first_of(below, BottleneckKind::kExposedCommunication), nullptr);
  auto at = suggest_optimizations(timeline_block(1000, 0, 50));
  const auto* b = first_of(at, BottleneckKind::kExposedCommunication);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->severity, 0.05, 1e-12);
  EXPECT_EQ(b->subject, "rank 0");
  EXPECT_EQ(at.suggestions.at(0).title, "Overlap communication with computation");
}

TEST(AdviceGap, IdleThreshold) {
  EXPECT_EQ(
      first_of(suggest_optimizations(timeline_block(1000, 99.9, 0)), BottleneckKind::kIdleGpu),
      nullptr);
  auto a = suggest_optimizations(timeline_block(1000, 100, 0));
  const auto* b = first_of(a, BottleneckKind::kIdleGpu);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->severity, 0.10, 1e-12);
  EXPECT_TRUE(contains(b->evidence, "idle 0.1 ms of the 1 ms span (10%)")) << b->evidence;
  EXPECT_EQ(a.suggestions.at(0).title, "Find what the host does in the gaps");
}

json launch_block(double launches, double avg_us, double graph_kernels = 0) {
  return json{
      {"total_duration_us", launches * avg_us},
      {"top_kernels", json::array({{{"name", "tiny"},
                                    {"calls", launches},
                                    {"self_cuda_total_us", launches * avg_us},
                                    {"avg_time_us", avg_us},
                                    {"pct_total", 100},
                                    {"category", "other"}}})},
      {"ranks",
       json::array(
           {{{"rank", 0},
             {"timeline", {{"span_us", launches * kLaunchCostUs}, {"busy_us", launches * avg_us}}},
             {"links", {{"gpu_events", launches}, {"graph_kernels", graph_kernels}}}}})}};
}

TEST(AdviceGap, ManyShortKernelsAreLaunchBound) {
  auto a = suggest_optimizations(launch_block(kMinTraceLaunches, 2));
  const auto* b = first_of(a, BottleneckKind::kLaunchBound);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->severity, 0.8, 1e-12);  // (10 − 2) / 10
  EXPECT_DOUBLE_EQ(b->figures.at("launches"), kMinTraceLaunches);
  EXPECT_DOUBLE_EQ(b->figures.at("short_launch_share"), 1.0);
  EXPECT_TRUE(has_title(a, "Capture the launches in a CUDA/HIP graph"));
  // One launch fewer than the minimum: a trace too small to judge.
  EXPECT_EQ(first_of(suggest_optimizations(launch_block(kMinTraceLaunches - 1, 2)),
                     BottleneckKind::kLaunchBound),
            nullptr);
  // Long kernels are not launch-bound however many there are.
  EXPECT_EQ(first_of(suggest_optimizations(launch_block(5000, 25)), BottleneckKind::kLaunchBound),
            nullptr);
}

TEST(AdviceGap, GraphReplayedLaunchesCarryNoHostCost) {
  auto a = suggest_optimizations(launch_block(1000, 2, /*graph_kernels=*/900));
  const auto* b = first_of(a, BottleneckKind::kLaunchBound);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->severity, 0.8 * 0.1, 1e-12);
  EXPECT_FALSE(has_title(a, "Capture the launches in a CUDA/HIP graph"));  // already graphs
  EXPECT_TRUE(has_title(a, "Fuse short kernels"));
}

json hot_block(const std::string& category, double pct) {
  return json{{"total_duration_us", 1000},
              {"top_kernels", json::array({{{"name", "k"},
                                            {"calls", 1},
                                            {"self_cuda_total_us", 1000},
                                            {"avg_time_us", 1000},
                                            {"pct_total", pct},
                                            {"category", category}}})}};
}

TEST(AdviceGap, HotKernelsGetTheirCategorysHint) {
  for (const auto& [category, title] : std::vector<std::pair<std::string, std::string>>{
           {"GEMM", "Tune or replace this GEMM"},
           {"moe_gemm", "Tune or replace this GEMM"},
           {"attention", "Use a fused attention kernel for this shape"},
           {"normalization", "Fuse the normalization or reduction with its neighbours"},
           {"softmax", "Fuse the normalization or reduction with its neighbours"},
           {"reduction", "Fuse the normalization or reduction with its neighbours"},
           {"elementwise", "Fuse elementwise work and avoid copies"},
           {"memcpy/memset", "Fuse elementwise work and avoid copies"},
           {"communication", "Overlap or shrink this collective"},
           {"kv_cache", "Fuse the KV-cache write"}}) {
    auto a = suggest_optimizations(hot_block(category, kHotKernelPct));
    ASSERT_EQ(a.suggestions.size(), 1u) << category;
    EXPECT_EQ(a.suggestions[0].title, title) << category;
    EXPECT_EQ(a.suggestions[0].applies_to, "k");
    EXPECT_TRUE(suggest_optimizations(hot_block(category, 9.9)).suggestions.empty()) << category;
  }
  EXPECT_TRUE(suggest_optimizations(hot_block("other", 90)).suggestions.empty());
}

TEST(AdviceGap, RecordedH200LlamaTrace) {
  // `magpie benchmark --trace-dir examples/traces` on the H200 Llama trace.
  auto a = suggest_optimizations(load_json(kData / "gap_llama_h200.json"));
  EXPECT_EQ(a.source_kind, "gap_report");
  EXPECT_EQ(a.kernel_id, "");
  ASSERT_FALSE(a.bottlenecks.empty());
  const auto& idle = a.bottlenecks[0];
  EXPECT_EQ(idle.kind, BottleneckKind::kIdleGpu);
  EXPECT_NEAR(idle.severity, 553651.9400000001 / 631138.662, 1e-12);
  EXPECT_EQ(idle.subject, "rank 0");
  EXPECT_DOUBLE_EQ(idle.figures.at("ranks_over_threshold"), 1);
  EXPECT_EQ(first_of(a, BottleneckKind::kExposedCommunication),
            nullptr);  // one GPU, no collectives
  EXPECT_NEAR(a.overall_score, 1 - idle.severity, 1e-12);
  // The hottest kernel, a cuBLAS GEMM at 26.6% of GPU time, gets its category's hint.
  auto it = std::find_if(a.suggestions.begin(), a.suggestions.end(),
                         [](const auto& s) { return s.title == "Tune or replace this GEMM"; });
  ASSERT_NE(it, a.suggestions.end());
  EXPECT_EQ(it->applies_to, "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT");
  EXPECT_TRUE(contains(it->detail, "26.6% of GPU time")) << it->detail;
  EXPECT_GT(it->priority, a.suggestions.front().priority);
}

TEST(AdviceGap, RecordedTwoRankSendRecvTrace) {
  // HTA's two-rank send/recv sample: a quarter of each rank's span is exposed NCCL time.
  auto a = suggest_optimizations(load_json(kData / "gap_hta_sendrecv.json"));
  const auto* comm = first_of(a, BottleneckKind::kExposedCommunication);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->subject, "rank 0");  // the worse of the two
  EXPECT_NEAR(comm->severity, 336983.0 / 1222847.0, 1e-12);
  EXPECT_DOUBLE_EQ(comm->figures.at("ranks_over_threshold"), 2);
  EXPECT_TRUE(
      contains(comm->evidence, "rank 0: 337 ms of 1223 ms (28%) is communication not overlapped"))
      << comm->evidence;
  EXPECT_NE(first_of(a, BottleneckKind::kIdleGpu), nullptr);
  EXPECT_TRUE(has_title(a, "Overlap or shrink this collective"));  // ncclKernel_SendRecv at 60.8%
}

TEST(AdviceGap, MalformedEntriesAreSkippedNotFatal) {
  auto a = suggest_optimizations(
      json::parse(R"({"ranks": [1, null], "top_kernels": ["x"], "total_duration_us": 5})"));
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  EXPECT_EQ(a.bottlenecks[0].kind, BottleneckKind::kNoData);
}

TEST(AdviceGap, BenchmarkReportIsReadThroughItsGapBlock) {
  json report{{"success", true},
              {"framework", "vllm"},
              {"gap_analysis", load_json(kData / "gap_hta_sendrecv.json")}};
  EXPECT_EQ(suggest_optimizations(report).source_kind, "gap_report");
}

TEST(AdviceGap, SharedTraceThroughTheLibrary) {
  const fs::path dir = fs::path(MAGPIE_SHARED_TRACES) / "h200";
  if (!fs::exists(dir))
    GTEST_SKIP() << dir << " is absent: no shared trace collection on this machine";
  analysis::GapAnalysisRunOptions opts;
  auto result = analysis::run_gap_analysis(dir, opts);
  auto a = suggest_optimizations(analysis::gap_analysis_json(result, {}));
  ASSERT_FALSE(a.bottlenecks.empty());
  EXPECT_EQ(a.bottlenecks[0].kind, BottleneckKind::kIdleGpu);
}

// ---- TraceLens roofline tables ----------------------------------------------

TEST(AdviceTraceLens, RecordedDecodeStage) {
  auto a = suggest_from_roofline_csv(kDecodeCsv);
  EXPECT_EQ(a.source_kind, "tracelens_report");
  EXPECT_EQ(a.kernel_id, "decode_only");
  // gpu_timeline.csv beside it: 43 ms of the 44 ms window idle (eager decode at batch 16).
  ASSERT_EQ(a.bottlenecks.at(0).kind, BottleneckKind::kIdleGpu);
  EXPECT_NEAR(a.bottlenecks[0].severity, 42.981879 / 44.150295, 1e-9);
  // 203 launches, mostly a few µs each.
  const auto* launch = first_of(a, BottleneckKind::kLaunchBound);
  ASSERT_NE(launch, nullptr);
  EXPECT_DOUBLE_EQ(launch->figures.at("launches"), 203);
  EXPECT_GT(launch->figures.at("short_launch_share"), 0.5);
  // The first GEMM row: 81.6% of the H200's 4.8 TB/s, below the bf16 ridge (989/4.8).
  auto mm = std::find_if(a.bottlenecks.begin(), a.bottlenecks.end(), [](const Bottleneck& b) {
    return b.subject == "aten::mm [[16, 4096], [4096, 14336]]";
  });
  ASSERT_NE(mm, a.bottlenecks.end());
  EXPECT_EQ(mm->kind, BottleneckKind::kMemoryBound);
  EXPECT_TRUE(contains(mm->evidence, "of 4.8 TB/s peak (82%)")) << mm->evidence;
  EXPECT_TRUE(contains(mm->evidence, "below ridge 206 FLOP/B")) << mm->evidence;
  EXPECT_NEAR(mm->figures.at("time_share"), 0.20641, 1e-4);
  // aten::mean reaches 0.6% of its roof: latency, not bandwidth.
  auto mean = std::find_if(a.bottlenecks.begin(), a.bottlenecks.end(),
                           [](const Bottleneck& b) { return b.subject.starts_with("aten::mean"); });
  ASSERT_NE(mean, a.bottlenecks.end());
  EXPECT_EQ(mean->kind, BottleneckKind::kLowOccupancyOrLatency);
  // Ranked by severity; suggestions follow the ranking.
  EXPECT_TRUE(std::is_sorted(a.bottlenecks.begin(), a.bottlenecks.end(),
                             [](const auto& x, const auto& y) { return x.severity > y.severity; }));
  EXPECT_TRUE(std::is_sorted(a.suggestions.begin(), a.suggestions.end(),
                             [](const auto& x, const auto& y) { return x.priority < y.priority; }));
  EXPECT_LE(a.suggestions.size(), 20u);
}

TEST(AdviceTraceLens, JsonRowsWithoutFilesDerivePeaksFromTheRows) {
  // Rows as JSON (numbers or their text): no timeline, no manifest; the peak
  // bandwidth is recovered from achieved TB/s over % of roofline.
  json rows = json::array();
  rows.push_back({{"source_category", "GEMM"},
                  {"op_name", "aten::mm"},
                  {"operation_count", "8"},
                  {"num_kernels", "1"},
                  {"time_pct", "40"},
                  {"kernel_time_us_mean", "30"},
                  {"arithmetic_intensity_flops_per_byte", "15.9"},
                  {"achieved_tbps_mean", "2.4"},
                  {"achieved_tflops_mean", "38"},
                  {"compute_spec", "matrix_bf16"},
                  {"roofline_bound", "memory"},
                  {"pct_roofline_mean", "50"}});
  rows.push_back({{"source_category", "other"},
                  {"op_name", "aten::cat"},
                  {"operation_count", 8},
                  {"num_kernels", 1},
                  {"time_pct", 10},
                  {"roofline_bound", ""}});
  auto a = suggest_optimizations(rows);
  ASSERT_EQ(a.bottlenecks.size(), 1u);  // 16 launches: too few for the launch rule
  const auto& b = a.bottlenecks[0];
  EXPECT_EQ(b.kind, BottleneckKind::kMemoryBound);
  EXPECT_NEAR(b.severity, 0.4 * 0.5, 1e-12);
  EXPECT_NEAR(b.figures.at("peak_tbps"), 4.8, 1e-12);     // 2.4 TB/s is 50%
  EXPECT_EQ(b.figures.count("ridge_flop_per_byte"), 0u);  // no compute peak known
  // With the GPU named, the ridge appears.
  auto named =
      suggest_optimizations(json{{"rows", rows}, {"gpu_arch", "H200"}, {"stage", "decode"}});
  EXPECT_EQ(named.kernel_id, "decode");
  EXPECT_TRUE(contains(named.bottlenecks.at(0).evidence, "below ridge 206 FLOP/B"))
      << named.bottlenecks[0].evidence;
}

TEST(AdviceTraceLens, SmallRowsAreLeftOutAndNoModelIsNoData) {
  json rows = json::array({{{"op_name", "aten::add"},
                            {"time_pct", 0.5},
                            {"roofline_bound", "memory"},
                            {"pct_roofline_mean", 20},
                            {"achieved_tbps_mean", 1}}});
  // 0.5% of the time × 80% headroom = 0.004 < the floor.
  EXPECT_TRUE(suggest_optimizations(rows).bottlenecks.empty());
  EXPECT_EQ(suggest_optimizations(rows).summary,
            "tracelens_report: no bottleneck above the rules' thresholds");
  json unmodelled =
      json::array({{{"op_name", "aten::cat"}, {"time_pct", 50}, {"roofline_bound", ""}}});
  auto a = suggest_optimizations(unmodelled);
  ASSERT_EQ(a.bottlenecks.size(), 1u);
  EXPECT_EQ(a.bottlenecks[0].kind, BottleneckKind::kNoData);
  EXPECT_TRUE(contains(a.bottlenecks[0].evidence, "record_shapes=True"));
}

TEST(AdviceTraceLens, AtMostTenRooflineRowsTheMostSevere) {
  json rows = json::array();
  for (int i = 0; i < 12; ++i) {  // severities 0.012 .. 0.045: all above the floor
    rows.push_back({{"op_name", "op" + std::to_string(i)},
                    {"time_pct", 2.4 + 0.6 * i},
                    {"roofline_bound", "memory"},
                    {"pct_roofline_mean", 50},
                    {"achieved_tbps_mean", 2.4}});
  }
  auto a = suggest_optimizations(rows);
  ASSERT_EQ(a.bottlenecks.size(), 10u);
  EXPECT_EQ(a.bottlenecks.front().subject, "op11");
  EXPECT_EQ(a.bottlenecks.back().subject, "op2");  // op0 and op1 left out
}

TEST(AdviceTraceLens, CsvErrors) {
  EXPECT_THROW(suggest_from_roofline_csv(kData / "no_such.csv"), Error);
  try {
    suggest_from_roofline_csv(kData / "gap_llama_h200.json");  // not a CSV
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_TRUE(contains(e.what(), "kernel_roofline_simple.csv")) << e.what();
  }
}

// ---- output --------------------------------------------------------------

TEST(AdviceJson, CarriesTheMcpFields) {
  auto j = to_json(suggest_optimizations(vector_add_state()));
  for (const char* k :
       {"kernel_id", "overall_score", "bottlenecks", "suggestions", "summary", "source_kind"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["bottlenecks"][0]["kind"], "memory_bound");
  EXPECT_TRUE(j["bottlenecks"][0]["figures"].contains("pct_of_roof"));
  EXPECT_EQ(j["suggestions"][0]["priority"], 1);
  EXPECT_TRUE(
      contains(j["summary"].get<std::string>(), "vector_add: 1 finding(s); first: memory_bound"));
}

TEST(AdviceJson, KindNames) {
  EXPECT_EQ(to_string(BottleneckKind::kMemoryBound), "memory_bound");
  EXPECT_EQ(to_string(BottleneckKind::kComputeBound), "compute_bound");
  EXPECT_EQ(to_string(BottleneckKind::kLaunchBound), "launch_bound");
  EXPECT_EQ(to_string(BottleneckKind::kExposedCommunication), "exposed_communication");
  EXPECT_EQ(to_string(BottleneckKind::kIdleGpu), "idle_gpu");
  EXPECT_EQ(to_string(BottleneckKind::kLowOccupancyOrLatency), "low_occupancy_or_latency");
  EXPECT_EQ(to_string(BottleneckKind::kCorrectnessFailure), "correctness_failure");
  EXPECT_EQ(to_string(BottleneckKind::kNoData), "no_data");
}

}  // namespace
}  // namespace magpie::advice
