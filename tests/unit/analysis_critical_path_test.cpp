// The dependency graph, its critical path and what-if re-timing on
// hand-written traces whose answers are worked out by hand in the comments,
// and the identity property (re-timing the unchanged graph gives back every
// recorded time) on real traces.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "analysis/critical_path.hpp"
#include "analysis/critical_path_graph.hpp"
#include "analysis/critical_path_ranks.hpp"
#include "analysis/critical_path_whatif.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {
namespace {

trace::Trace parse(const std::string& json) {
  PaddedBuffer b(json.size());
  std::memcpy(b.data(), json.data(), json.size());
  return trace::parse_kineto(b, "test.json", {});
}

struct Analysed {
  trace::Trace trace;
  DependencyGraph graph;
  std::vector<PathWindow> windows;
  CriticalPathReport report;
};

Analysed analyse(const std::string& json) {
  Analysed a{parse(json), {}, {}, {}};
  const auto& links = trace::links_of(a.trace);
  a.graph = build_dependency_graph(a.trace, links);
  std::vector<std::string> warnings;
  a.windows = path_windows(a.trace, links, a.graph, warnings);
  a.report = analyze_critical_path(a.trace, links, a.graph, a.windows);
  return a;
}

int64_t cat_us(const CriticalPath& p, PathCategory c) { return p.by_category[static_cast<size_t>(c)] / 1000; }

// CPU-bound: two ops, each launching a short kernel the GPU finishes long
// before the next launch, then a sync that waits for nothing.
//   aten::mm [0,10]: launch [2,4] → k1 [6,8]; untraced [10,12];
//   aten::add [12,30]: launch [20,22] → k2 [25,27]; untraced [30,31];
//   cudaDeviceSynchronize [31,40] (k2 ended at 27: no wait).
// Path from the sync back: sync 9, untraced 1, add 8 + launch 2 + add 8,
// untraced 2, mm 6 + launch 2 + mm 2: cpu 27, launch 4, sync 9 = 40.
const char* kCpuBound = R"J({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10,"args":{"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":2,"args":{"External id":1,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":6,"dur":2,"args":{"device":0,"stream":7,"correlation":1,"External id":1}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":12,"dur":18,"args":{"External id":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":2,"args":{"External id":2,"correlation":2}},
  {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":25,"dur":2,"args":{"device":0,"stream":7,"correlation":2,"External id":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":31,"dur":9,"args":{"correlation":3}}]})J";

// GPU-bound: two 100 us kernels queued back to back, a sync waits for both.
//   launch [0,2] → k1 [5,105] (launch latency 5, stream idle);
//   launch [3,5] → k2 [105,205] (queued behind k1);
//   cudaDeviceSynchronize [6,210] waits for k2.
// Path: launch latency [0,5], k1 100, k2 100, sync [205,210] 5 = 210.
const char* kGpuBound = R"J({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":5.5,"args":{"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":2,"args":{"External id":1,"correlation":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":3,"dur":2,"args":{"External id":1,"correlation":2}},
  {"ph":"X","cat":"kernel","name":"gemm_a","pid":0,"tid":7,"ts":5,"dur":100,"args":{"device":0,"stream":7,"correlation":1,"External id":1}},
  {"ph":"X","cat":"kernel","name":"gemm_b","pid":0,"tid":7,"ts":105,"dur":100,"args":{"device":0,"stream":7,"correlation":2,"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":6,"dur":204,"args":{"correlation":3}}]})J";

TEST(CriticalPath, CpuBoundChainIsHostTimeLaunchesAndTheSync) {
  const Analysed a = analyse(kCpuBound);
  ASSERT_EQ(a.report.paths.size(), 1u);  // no iterations: the whole window
  const CriticalPath& p = a.report.paths[0];
  EXPECT_EQ(p.length_ns(), 40'000);
  EXPECT_EQ(cat_us(p, PathCategory::kCpu), 27);
  EXPECT_EQ(cat_us(p, PathCategory::kLaunch), 4);
  EXPECT_EQ(cat_us(p, PathCategory::kSync), 9);
  EXPECT_EQ(cat_us(p, PathCategory::kGpu), 0);
  EXPECT_EQ(a.report.bound, "CPU-bound");
  // aten::add: its self time (16) and launch call (2) are on the path; its
  // kernel (2 us of the 4 us of GPU time) is not.
  const auto& ops = a.report.ops;
  auto add = std::find_if(ops.begin(), ops.end(), [](const NameShare& s) { return s.name == "aten::add"; });
  ASSERT_NE(add, ops.end());
  EXPECT_EQ(add->path_ns, 18'000);
  EXPECT_EQ(add->kernel_ns, 2'000);
  EXPECT_EQ(add->path_gpu_ns, 0);
  // HTA idle breakdown: k2 was launched (20) after k1 ended (8): host wait 17.
  ASSERT_EQ(a.report.idle.size(), 1u);
  EXPECT_EQ(a.report.idle[0].host_wait_ns, 17'000);
  EXPECT_EQ(a.report.idle[0].kernel_wait_ns, 0);
}

TEST(CriticalPath, GpuBoundChainGoesThroughTheSyncToTheKernels) {
  const Analysed a = analyse(kGpuBound);
  const CriticalPath& p = a.report.paths[0];
  EXPECT_EQ(p.length_ns(), 210'000);
  EXPECT_EQ(cat_us(p, PathCategory::kGpu), 200);
  EXPECT_EQ(cat_us(p, PathCategory::kLaunch), 5);
  EXPECT_EQ(cat_us(p, PathCategory::kSync), 5);
  EXPECT_EQ(cat_us(p, PathCategory::kCpu), 0);
  EXPECT_EQ(a.report.bound, "GPU-bound");
  EXPECT_EQ(a.graph.stats.sync_edges, 1u);
  EXPECT_EQ(a.graph.stats.launch_latency_ns, 5'000);
}

TEST(CriticalPath, RetimingTheUnchangedGraphGivesBackTheTrace) {
  for (const char* json : {kCpuBound, kGpuBound}) {
    const Analysed a = analyse(json);
    const Schedule s = retime(a.graph);
    EXPECT_EQ(s.start_ns, a.graph.start_ns);
    EXPECT_EQ(s.end_ns, a.graph.end_ns);
  }
}

TEST(WhatIf, FasterKernelsOnAGpuBoundTraceGainTheirSavedTime) {
  const Analysed a = analyse(kGpuBound);
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("kernel:gemm:2x"));
  EXPECT_EQ(r.matched, 2u);
  // k1 [5,55], k2 [55,105], sync ends 5 later: 110.
  EXPECT_EQ(r.whole.before_ns, 210'000);
  EXPECT_EQ(r.whole.after_ns, 110'000);
  const auto op = what_if(a.trace, a.graph, a.windows, parse_scenario("op:aten::mm:2x"));
  EXPECT_EQ(op.whole.after_ns, 110'000);
}

TEST(WhatIf, FasterKernelsOnACpuBoundTraceGainNothing) {
  const Analysed a = analyse(kCpuBound);
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("op:aten::mm:inf"));
  EXPECT_EQ(r.matched, 1u);
  EXPECT_EQ(r.gain_ns(), 0);
}

TEST(WhatIf, AddedGpuTimeShowsOnlyWhereItIsNotHidden) {
  const Analysed a = analyse(kCpuBound);
  // k1 becomes [6,58]; k2 waits for it: [59,61] (1 us back-to-back gap, the
  // default when the trace has no queued work to measure one); the sync,
  // which did not wait before, now returns when k2 ends: 61. Of the 50 us,
  // 29 were hidden behind host time.
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("op:aten::mm:+50us"));
  EXPECT_EQ(r.matched, 1u);
  EXPECT_EQ(r.whole.after_ns, 61'000);
}

TEST(WhatIf, CpuFasterHalvesHostTimeButNotTheSyncFloor) {
  const Analysed a = analyse(kCpuBound);
  // Host pieces (cpu 27 + launch 4) halve to 15.5; the sync (9, no wait) stays.
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("cpu:2x"));
  EXPECT_EQ(r.whole.after_ns, 24'500);
}

TEST(WhatIf, LaunchOverheadRemovedKeepsTheFirstLaunchAndTheTail) {
  const Analysed a = analyse(kCpuBound);
  // Host time from the second piece of the first launch region on is gone up
  // to the last launch: mm [0,2] + first launch [2,4]; then add's tail [22,30]
  // (8), untraced 1, sync 9: 4 + 8 + 1 + 9 = 22.
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("launch:0"));
  EXPECT_EQ(r.whole.after_ns, 22'000);
}

TEST(WhatIf, SyncRemovedStopsWaiting) {
  const Analysed a = analyse(kGpuBound);
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("sync:0"));
  EXPECT_EQ(r.matched, 1u);
  EXPECT_EQ(r.whole.after_ns, 205'000);  // the window now ends with k2
}

TEST(WhatIf, BoundsNameTheOpWhoseKernelsSetTheTime) {
  const Analysed a = analyse(kGpuBound);
  const auto bounds = op_gain_bounds(a.trace, a.graph, a.windows);
  ASSERT_FALSE(bounds.empty());
  EXPECT_EQ(bounds[0].name, "aten::mm");
  // Kernels at zero: k1 at 5 (launch latency), k2 at 8 (its launch at 3 + 5),
  // the sync returns 5 us after k2 as it did: 13.
  EXPECT_EQ(bounds[0].gpu_gain_ns, 197'000);
}

TEST(WhatIfCalibration, MeasuredStepScalesHostTimeUntilTheStepMatches) {
  Analysed a = analyse(kCpuBound);
  // Traced 40 us; "measured" 24.5 us is what cpu:2x gives: host time halves
  // (31 → 15.5) and the sync's own 9 us stays.
  const Calibration c = calibrate(a.graph, a.windows, {.measured_step_ns = 24'500});
  EXPECT_TRUE(c.applied);
  EXPECT_EQ(c.traced_step_ns, 40'000);
  EXPECT_NEAR(c.host_speedup, 2.0, 0.01);
  EXPECT_NEAR(static_cast<double>(c.calibrated_step_ns), 24'500, 50);
  // Every later scenario starts from the calibrated run; the report stays as traced.
  const auto r = what_if(a.trace, a.graph, a.windows, parse_scenario("op:aten::mm:inf"));
  EXPECT_NEAR(static_cast<double>(r.whole.before_ns), 24'500, 50);
  EXPECT_EQ(a.report.paths[0].length_ns(), 40'000);
}

TEST(WhatIfCalibration, GpuFloorAboveTheMeasuredStepIsSaidAndKernelOverheadLowersIt) {
  Analysed a = analyse(kGpuBound);
  Analysed b = analyse(kGpuBound);
  // 210 us traced, of which 200 are kernels: no host factor reaches 110.
  const Calibration host_only = calibrate(a.graph, a.windows, {.measured_step_ns = 110'000});
  ASSERT_FALSE(host_only.notes.empty());
  EXPECT_NE(host_only.notes[0].find("slower under the profiler"), std::string::npos) << host_only.notes[0];
  EXPECT_GE(host_only.calibrated_step_ns, 209'000);
  // 50 us off each kernel: 5 + 50 + 50 + 5 = 110, already the measured step.
  const Calibration both = calibrate(b.graph, b.windows, {.measured_step_ns = 110'000, .kernel_overhead_ns = 50'000});
  EXPECT_EQ(both.calibrated_step_ns, 110'000);
  EXPECT_DOUBLE_EQ(both.host_speedup, 1.0);
}

TEST(WhatIfCalibration, NothingAskedChangesNothing) {
  Analysed a = analyse(kCpuBound);
  const auto before = a.graph.cost_ns;
  const Calibration c = calibrate(a.graph, a.windows, {});
  EXPECT_FALSE(c.applied);
  EXPECT_EQ(a.graph.cost_ns, before);
}

// Two ranks, one all-reduce. Rank 0 launches at once and its kernel starts at
// 5 but cannot finish before rank 1 arrives (its host works until 75; kernel
// from 80); both end at 105 after 25 us of transfer. Each rank then syncs.
const char* kRank0 = R"J({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"c10d::allreduce_","pid":1,"tid":1,"ts":0,"dur":3,"args":{"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"External id":1,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":5,"dur":100,"args":{"device":0,"stream":7,"correlation":1,"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":3,"dur":103,"args":{"correlation":2}}]})J";
const char* kRank1 = R"J({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"aten::busy","pid":1,"tid":1,"ts":0,"dur":75,"args":{"External id":1}},
  {"ph":"X","cat":"cpu_op","name":"c10d::allreduce_","pid":1,"tid":1,"ts":75,"dur":3,"args":{"External id":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":76,"dur":2,"args":{"External id":2,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":80,"dur":25,"args":{"device":0,"stream":7,"correlation":1,"External id":2}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":78,"dur":28,"args":{"correlation":2}}]})J";

TEST(CrossRank, TheRankThatArrivesFirstWaitsAndOnlyTheLastOneCanGain) {
  Analysed r0 = analyse(kRank0), r1 = analyse(kRank1);
  std::vector<const trace::Trace*> traces{&r0.trace, &r1.trace};
  std::vector<DependencyGraph*> graphs{&r0.graph, &r1.graph};
  const CrossRankSummary linked = link_ranks(traces, graphs);
  EXPECT_EQ(linked.matched_calls, 2u);
  EXPECT_EQ(linked.unmatched_calls, 0u);
  // Re-timing the linked graphs still gives back both traces.
  for (const Analysed* a : {&r0, &r1}) {
    const Schedule s = retime(a->graph);
    EXPECT_EQ(s.end_ns, a->graph.end_ns);
  }
  // Rank 0's path: of the collective's 100 us, 75 were waiting for rank 1.
  const CriticalPathReport rep0 = analyze_critical_path(r0.trace, trace::links_of(r0.trace), r0.graph, r0.windows);
  EXPECT_EQ(rep0.paths[0].collective_wait_ns, 75'000);
  EXPECT_EQ(cat_us(rep0.paths[0], PathCategory::kCollective), 100);
  // If rank 1 had arrived with rank 0, rank 0 would end 75 us sooner; its own
  // host time does not matter, rank 1's does.
  EXPECT_EQ(what_if(r0.trace, r0.graph, r0.windows, parse_scenario("wait:0")).gain_ns(), 75'000);
  EXPECT_EQ(what_if(r0.trace, r0.graph, r0.windows, parse_scenario("cpu:2x")).gain_ns(), 0);
  EXPECT_EQ(what_if(r1.trace, r1.graph, r1.windows, parse_scenario("wait:0")).gain_ns(), 0);
  EXPECT_GT(what_if(r1.trace, r1.graph, r1.windows, parse_scenario("cpu:2x")).gain_ns(), 30'000);
  // Unlinked, a rank's collective is just its kernel time.
  Analysed alone = analyse(kRank0);
  const auto w = what_if(alone.trace, alone.graph, alone.windows, parse_scenario("wait:0"));
  EXPECT_EQ(w.matched, 0u);
  ASSERT_FALSE(w.warnings.empty());
}

TEST(WhatIf, ScenarioSyntax) {
  EXPECT_EQ(parse_scenario("op:aten::mm:2x").name, "aten::mm");
  EXPECT_EQ(parse_scenario("op:aten::mm:2x").speedup, 2.0);
  EXPECT_EQ(parse_scenario("op:aten::mm:+30us").add_ns, 30'000);
  EXPECT_EQ(parse_scenario("kernel:gemm:+1.5ms").add_ns, 1'500'000);
  EXPECT_EQ(parse_scenario("graph").kind, ScenarioKind::kLaunch);
  EXPECT_EQ(parse_scenario("cpu:2x").name, "");
  EXPECT_EQ(parse_scenario("cpu:aten::linear:2x").name, "aten::linear");
  for (const char* bad : {"op:aten::mm", "fast", "op::2x", "kernel:x:2", "cpu:+3us", "op:x:-2x", "op:x:+3parsecs"}) {
    EXPECT_THROW(parse_scenario(bad), Error) << bad;
  }
}

// Bad input: a launch call after its kernel (clock skew) and a kernel whose
// correlation matches nothing give warnings and a path, never a crash.
TEST(CriticalPath, SkewAndMissingCorrelationsWarnAndStillGiveAPath) {
  const Analysed a = analyse(R"J({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":10,"args":{"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,"dur":2,"args":{"correlation":1}},
  {"ph":"X","cat":"kernel","name":"early","pid":0,"tid":7,"ts":5,"dur":2,"args":{"device":0,"stream":7,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"orphan","pid":0,"tid":7,"ts":30,"dur":2,"args":{"device":0,"stream":7,"correlation":99}}]})J");
  EXPECT_EQ(a.graph.stats.launch_after_start, 1u);
  EXPECT_EQ(a.graph.stats.gpu_without_launch, 1u);  // the orphan; the early one has a launch, left out
  EXPECT_FALSE(a.graph.warnings.empty());
  ASSERT_EQ(a.report.paths.size(), 1u);
  EXPECT_EQ(a.report.paths[0].length_ns(), 27'000);  // 5 → 32
  const Schedule s = retime(a.graph);
  EXPECT_EQ(s.end_ns, a.graph.end_ns);
}

// Real traces: re-timing reproduces every node, each path covers its window
// exactly, and the iterations are found.
TEST(CriticalPath, RealTracesReproduceAndPartitionTheirWindows) {
  const std::filesystem::path shared = MAGPIE_SHARED_TRACES;
  const std::filesystem::path data = std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data";
  std::vector<std::filesystem::path> files = {data / "h200_graphs/graph_replay.json.gz",
                                              data / "h200_graphs/compile_default.json.gz"};
  for (const char* f : {"h200/llama_4layer_bs16_prompt1024_decode16.json.gz", "public/hta__nccl_collectives.json.gz",
                        "public/traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"}) {
    if (std::filesystem::exists(shared / f)) files.push_back(shared / f);
  }
  if (files.size() == 2) std::cerr << "[ note ] ../shared/traces absent: checking tests/data traces only\n";
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    trace::Trace t = trace::load_trace(f, {});
    const auto& links = trace::links_of(t);
    const DependencyGraph g = build_dependency_graph(t, links);
    const Schedule s = retime(g);
    EXPECT_EQ(s.start_ns, g.start_ns);
    EXPECT_EQ(s.end_ns, g.end_ns);
    std::vector<std::string> warnings;
    const auto windows = path_windows(t, links, g, warnings);
    const auto report = analyze_critical_path(t, links, g, windows);
    ASSERT_FALSE(report.paths.empty());
    for (const auto& p : report.paths) {
      int64_t sum = 0;
      for (const auto v : p.by_category) sum += v;
      EXPECT_EQ(sum, p.length_ns()) << p.label;
      for (size_t i = 1; i < p.pieces.size(); ++i) EXPECT_EQ(p.pieces[i].start_ns, p.pieces[i - 1].end_ns);
    }
  }
}

}  // namespace
}  // namespace magpie::analysis
