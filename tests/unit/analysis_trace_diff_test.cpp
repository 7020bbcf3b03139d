// The trace diff's matching on hand-written traces whose answers are worked
// out in the comments, and the identity property (a trace diffed with itself
// changes nothing) on real traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "analysis/trace_diff.hpp"
#include "core/file_io.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {
namespace {

trace::Trace parse(const std::string& json) {
  PaddedBuffer b(json.size());
  std::memcpy(b.data(), json.data(), json.size());
  trace::Trace t = trace::parse_kineto(b, "test.json", {});
  trace::links_of(t);
  return t;
}

// One step: aten::linear [4,8] → aten::addmm launching gemm<float, 4> (100 us),
// then aten::relu launching relu_kernel (10 us) and three aten::add calls.
const char* kBefore = R"J({"traceEvents":[
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":1,"tid":1,"ts":0,"dur":300},
  {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":1,"dur":20,"args":{"External id":1,"Input Dims":[[4,8],[8,8]]}},
  {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":2,"dur":10,"args":{"External id":2,"Input Dims":[[8],[4,8],[8,8]]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":3,"dur":2,"args":{"External id":2,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"gemm<float, 4>","pid":0,"tid":7,"ts":10,"dur":100,"args":{"device":0,"stream":7,"correlation":1,"External id":2}},
  {"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":30,"dur":10,"args":{"External id":3,"Input Dims":[[4,8]]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":31,"dur":2,"args":{"External id":3,"correlation":2}},
  {"ph":"X","cat":"kernel","name":"relu_kernel","pid":0,"tid":7,"ts":110,"dur":10,"args":{"device":0,"stream":7,"correlation":2,"External id":3}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":50,"dur":5,"args":{"External id":4,"Input Dims":[[4,8],[4,8]]}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":60,"dur":5,"args":{"External id":5,"Input Dims":[[4,8],[4,8]]}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":70,"dur":5,"args":{"External id":6,"Input Dims":[[4,8],[4,8]]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":80,"dur":45,"args":{"correlation":3}}]})J";

// After: the GEMM kernel is a different instantiation and twice as fast
// (50 us), relu became gelu (added/removed), one aten::add call is gone.
const char* kAfter = R"J({"traceEvents":[
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#12","pid":1,"tid":1,"ts":0,"dur":300},
  {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":1,"dur":20,"args":{"External id":1,"Input Dims":[[4,8],[8,8]]}},
  {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":2,"dur":10,"args":{"External id":2,"Input Dims":[[8],[4,8],[8,8]]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":3,"dur":2,"args":{"External id":2,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"gemm<__half, 4>","pid":0,"tid":7,"ts":10,"dur":50,"args":{"device":0,"stream":7,"correlation":1,"External id":2}},
  {"ph":"X","cat":"cpu_op","name":"aten::gelu","pid":1,"tid":1,"ts":30,"dur":10,"args":{"External id":3,"Input Dims":[[4,8]]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":31,"dur":2,"args":{"External id":3,"correlation":2}},
  {"ph":"X","cat":"kernel","name":"gelu_kernel","pid":0,"tid":7,"ts":60,"dur":10,"args":{"device":0,"stream":7,"correlation":2,"External id":3}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":50,"dur":5,"args":{"External id":4,"Input Dims":[[4,8],[4,8]]}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":60,"dur":5,"args":{"External id":5,"Input Dims":[[4,8],[4,8]]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":80,"dur":5,"args":{"correlation":3}}]})J";

const OpDiffRow* op(const TraceDiff& d, std::string_view name) {
  auto it = std::find_if(d.ops.begin(), d.ops.end(), [&](const OpDiffRow& r) { return r.name() == name; });
  return it == d.ops.end() ? nullptr : &*it;
}
const KernelDiffRow* kernel(const TraceDiff& d, std::string_view name) {
  auto it = std::find_if(d.kernels.begin(), d.kernels.end(), [&](const KernelDiffRow& r) { return r.name() == name; });
  return it == d.kernels.end() ? nullptr : &*it;
}

TEST(TraceDiff, NormalisedNamesDropTemplateArgumentsIdsAndHashes) {
  EXPECT_EQ(normalised_name("gemm<float, 4>"), "gemm<>");
  EXPECT_EQ(normalised_name("void k<a<b>, 3>(int)"), "void k<>(int)");
  EXPECT_EQ(normalised_name("ProfilerStep#3"), "ProfilerStep#N");
  EXPECT_EQ(normalised_name("triton_poi_fused_gelu_0"), "triton_poi_fused_gelu_N");
  EXPECT_EQ(normalised_name("Torch-Compiled Region: 0/1"), "Torch-Compiled Region: N/N");
  EXPECT_EQ(normalised_name("## Call CompiledFxGraph fg6uv7qexbyl2gk5g3nt25xcirhypdgj3z75rlgwiv7jethy7qkh ##"),
            "## Call CompiledFxGraph * ##");
  EXPECT_EQ(normalised_name("aten::conv2d"), "aten::conv2d");
  EXPECT_EQ(normalised_name("nvjet_sm90_tst"), "nvjet_sm90_tst");
}

TEST(TraceDiff, OpsMatchByPlaceAndKernelsByTheirLaunchingOp) {
  const trace::Trace before = parse(kBefore), after = parse(kAfter);
  const TraceDiff d = diff_traces(before, after);
  EXPECT_TRUE(d.shapes_used);
  // aten::addmm under ProfilerStep#N > aten::linear: GPU 100 → 50 us, host unchanged.
  const OpDiffRow* addmm = op(d, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->parent, "ProfilerStep#N > aten::linear");
  EXPECT_EQ(addmm->shapes, "[[8],[4,8],[8,8]]");
  EXPECT_EQ(addmm->gpu_before_ns, 100'000);
  EXPECT_EQ(addmm->gpu_after_ns, 50'000);
  EXPECT_EQ(addmm->host_after_ns - addmm->host_before_ns, 0);
  EXPECT_EQ(addmm->status, DiffStatus::kChanged);
  // Its parent carries its GPU time too (children included).
  EXPECT_EQ(op(d, "aten::linear")->gpu_before_ns, 100'000);
  EXPECT_EQ(op(d, "ProfilerStep#7")->name_after, "ProfilerStep#12");
  EXPECT_EQ(op(d, "aten::relu")->status, DiffStatus::kRemoved);
  EXPECT_EQ(op(d, "aten::gelu")->status, DiffStatus::kAdded);
  // Three calls before, two after: two pair, the third is gone.
  const OpDiffRow* add = op(d, "aten::add");
  EXPECT_EQ(add->calls_before, 3u);
  EXPECT_EQ(add->calls_after, 2u);
  EXPECT_EQ(add->paired_calls, 2u);
  EXPECT_EQ(add->status, DiffStatus::kChanged);
  // The GEMM kernel differs only in template arguments: one row, changed.
  const KernelDiffRow* gemm = kernel(d, "gemm<float, 4>");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->name_after, "gemm<__half, 4>");
  EXPECT_EQ(gemm->op_before, "ProfilerStep#N > aten::linear > aten::addmm");
  EXPECT_EQ(gemm->gpu_after_ns - gemm->gpu_before_ns, -50'000);
  EXPECT_EQ(gemm->status, DiffStatus::kChanged);
  EXPECT_EQ(kernel(d, "relu_kernel")->status, DiffStatus::kRemoved);
  EXPECT_EQ(kernel(d, "gelu_kernel")->status, DiffStatus::kAdded);
  // End to end: one step each, and the step's change is the sum of its
  // critical path's category changes.
  EXPECT_EQ(d.before.iterations, 1u);
  EXPECT_EQ(d.after.iterations, 1u);
  int64_t parts = 0;
  for (size_t c = 0; c < kPathCategories; ++c) parts += d.after.step[c] - d.before.step[c];
  EXPECT_EQ(parts, d.after.median_step_ns - d.before.median_step_ns);
  EXPECT_EQ(d.before.median_step, "ProfilerStep#7");
  // The median iteration's path time per op covers the iteration: its changes sum to the same.
  ASSERT_FALSE(d.path_ops_step.empty());
  int64_t by_op = 0;
  for (const auto& p : d.path_ops_step) by_op += p.delta_ns();
  EXPECT_EQ(by_op, d.after.median_step_ns - d.before.median_step_ns);
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
}

TEST(TraceDiff, AKernelLaunchedFromAnotherOpIsMoved) {
  // Before: gemm launched by aten::mm. After: the same kernel replayed by a
  // graph launch inside a "replay" annotation.
  const trace::Trace before = parse(R"J({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10,"args":{"External id":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"External id":1,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":5,"dur":20,"args":{"device":0,"stream":7,"correlation":1,"External id":1}}]})J");
  const trace::Trace after = parse(R"J({"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"replay","pid":1,"tid":1,"ts":0,"dur":10},
    {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":9}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":5,"dur":20,"args":{"device":0,"stream":7,"correlation":9}}]})J");
  const TraceDiff d = diff_traces(before, after);
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_EQ(d.kernels[0].status, DiffStatus::kMoved);
  EXPECT_EQ(d.kernels[0].op_before, "aten::mm");
  EXPECT_EQ(d.kernels[0].op_after, "replay");
  EXPECT_EQ(d.kernels[0].gpu_after_ns, d.kernels[0].gpu_before_ns);
}

void expect_no_change(const TraceDiff& d) {
  for (const auto& r : d.ops) {
    EXPECT_EQ(r.status, DiffStatus::kUnchanged) << r.name();
    EXPECT_EQ(r.calls_before, r.calls_after) << r.name();
    EXPECT_EQ(r.host_before_ns, r.host_after_ns) << r.name();
    EXPECT_EQ(r.gpu_before_ns, r.gpu_after_ns) << r.name();
  }
  for (const auto& k : d.kernels) {
    EXPECT_EQ(k.status, DiffStatus::kUnchanged) << k.name();
    EXPECT_EQ(k.gpu_before_ns, k.gpu_after_ns) << k.name();
  }
  for (const auto& p : d.path_ops) EXPECT_EQ(p.delta_ns(), 0) << p.name;
  for (const auto& p : d.path_ops_step) EXPECT_EQ(p.delta_ns(), 0) << p.name;
  EXPECT_EQ(d.before.window_ns, d.after.window_ns);
  EXPECT_EQ(d.before.window, d.after.window);
  EXPECT_EQ(d.before.median_step_ns, d.after.median_step_ns);
}

TEST(TraceDiff, ATraceDiffedWithItselfChangesNothing) {
  const trace::Trace t = parse(kBefore);
  const TraceDiff d = diff_traces(t, t);
  EXPECT_FALSE(d.ops.empty());
  expect_no_change(d);
}

TEST(TraceDiff, RealTracesDiffedWithThemselvesChangeNothing) {
  const std::filesystem::path data = std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data/h200_graphs";
  for (const char* name : {"compile_default.json.gz", "graph_replay.json.gz"}) {
    trace::Trace t = trace::load_trace(data / name, {});
    trace::links_of(t);
    const TraceDiff d = diff_traces(t, t);
    EXPECT_GT(d.ops.size(), 5u) << name;
    EXPECT_GT(d.kernels.size(), 3u) << name;
    expect_no_change(d);
  }
}

TEST(TraceDiff, BadPairsWarnAndGivePartialResults) {
  const trace::Trace gpu = parse(kBefore);
  // CPU-only after: every kernel removed, ops still matched.
  const trace::Trace cpu_only = parse(R"J({"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":300},
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":1,"dur":20}]})J");
  const TraceDiff d = diff_traces(gpu, cpu_only);
  auto warned = [&](std::string_view text) {
    return std::any_of(d.warnings.begin(), d.warnings.end(),
                       [&](const std::string& w) { return w.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(warned("AFTER has no GPU work")) << ::testing::PrintToString(d.warnings);
  EXPECT_TRUE(warned("recorded no input shapes")) << ::testing::PrintToString(d.warnings);
  EXPECT_FALSE(d.shapes_used);
  EXPECT_EQ(op(d, "aten::linear")->calls_after, 1u);  // matched without shapes
  EXPECT_TRUE(std::all_of(d.kernels.begin(), d.kernels.end(),
                          [](const KernelDiffRow& k) { return k.status == DiffStatus::kRemoved; }));
  // One step against two: the medians may be of different phases.
  const std::string two_steps = std::string(kBefore).replace(std::string(kBefore).find("\n  {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\""), 0,
      "\n  {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#8\",\"pid\":1,\"tid\":1,\"ts\":400,\"dur\":50},");
  const TraceDiff steps = diff_traces(gpu, parse(two_steps));
  EXPECT_EQ(steps.after.iterations, 2u) << two_steps;
  EXPECT_TRUE(std::any_of(steps.warnings.begin(), steps.warnings.end(), [](const std::string& w) {
    return w.find("BEFORE has 1 iterations and AFTER 2") != std::string::npos;
  })) << ::testing::PrintToString(steps.warnings);
  // An empty trace: warnings, no crash.
  const trace::Trace empty = parse(R"J({"traceEvents":[]})J");
  const TraceDiff e = diff_traces(empty, gpu);
  EXPECT_FALSE(e.warnings.empty());
  EXPECT_EQ(e.count_ops(DiffStatus::kAdded), e.ops.size());
}

}  // namespace
}  // namespace magpie::analysis
