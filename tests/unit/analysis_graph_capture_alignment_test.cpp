// Graph-capture alignment when the capture trace's launches name no kernel
// (CUDA, torch.cuda.graph): captured launch calls are those whose work never
// ran; each Begin/EndCapture window is one graph; a replay is matched to the
// graph with its sequence of kernels/memsets/copies and aligned in order.
// Hand-written traces in the shape PyTorch writes (the real H200 pair is
// tests/e2e/test_tracelens.py's), so each answer is known.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/graph_capture_alignment.hpp"
#include "analysis/roofline_table.hpp"
#include "analysis/tracelens_report.hpp"
#include "core/file_io.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::analysis {
namespace {

trace::Trace parse(const std::string& json) {
  PaddedBuffer b(json.size());
  std::memcpy(b.data(), json.data(), json.size());
  return trace::parse_kineto(b, "test.json", {});
}

CaptureTrace capture_of(const std::string& json) {
  CaptureTrace c{parse(json), {}};
  c.links = trace::link_trace(c.trace);
  return c;
}

// Warm-up: aten::mm runs once eagerly (its kernel ran: not captured). Graph 1
// captures mm → add → zero_ (a memset); graph 2 captures a lone add.
const char* kCapture = R"J({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10,"args":{"External id":1,"Input Dims":[[8,16],[16,32]],"Input type":["float","float"]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"External id":1,"correlation":1}},
  {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":3,"dur":4,"args":{"device":0,"stream":7,"correlation":1,"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaStreamBeginCapture","pid":1,"tid":1,"ts":20,"dur":1,"args":{"correlation":2}},
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":22,"dur":10,"args":{"External id":3,"Input Dims":[[8,16],[16,32]],"Input type":["float","float"]}},
  {"ph":"X","cat":"cuda_driver","name":"cuLaunchKernelEx","pid":1,"tid":1,"ts":23,"dur":1,"args":{"External id":3,"correlation":3}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":34,"dur":10,"args":{"External id":4,"Input Dims":[[8,32],[8,32],[]],"Input type":["float","float","Scalar"]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":35,"dur":1,"args":{"External id":4,"correlation":4}},
  {"ph":"X","cat":"cpu_op","name":"aten::zero_","pid":1,"tid":1,"ts":46,"dur":5,"args":{"External id":5,"Input Dims":[[8,32]],"Input type":["float"]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaMemsetAsync","pid":1,"tid":1,"ts":47,"dur":1,"args":{"External id":5,"correlation":5}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaStreamEndCapture","pid":1,"tid":1,"ts":52,"dur":1,"args":{"correlation":6}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphInstantiate","pid":1,"tid":1,"ts":54,"dur":3,"args":{"correlation":7}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaStreamBeginCapture","pid":1,"tid":1,"ts":60,"dur":1,"args":{"correlation":8}},
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":62,"dur":10,"args":{"External id":9,"Input Dims":[[4,4],[4,4],[]],"Input type":["float","float","Scalar"]}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":63,"dur":1,"args":{"External id":9,"correlation":9}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaStreamEndCapture","pid":1,"tid":1,"ts":74,"dur":1,"args":{"correlation":10}}]})J";

// Two replays of graph 1, one of graph 2, one of a graph nobody captured
// (memcpy then kernel).
const char* kReplay = R"J({"traceEvents":[
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":100}},
  {"ph":"X","cat":"kernel","name":"sm90_gemm","pid":0,"tid":7,"ts":10,"dur":4,"args":{"device":0,"stream":7,"correlation":100}},
  {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":15,"dur":2,"args":{"device":0,"stream":7,"correlation":100}},
  {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":18,"dur":1,"args":{"device":0,"stream":7,"correlation":100}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":30,"dur":5,"args":{"correlation":101}},
  {"ph":"X","cat":"kernel","name":"sm90_gemm","pid":0,"tid":7,"ts":40,"dur":4,"args":{"device":0,"stream":7,"correlation":101}},
  {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":45,"dur":2,"args":{"device":0,"stream":7,"correlation":101}},
  {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":48,"dur":1,"args":{"device":0,"stream":7,"correlation":101}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":60,"dur":5,"args":{"correlation":102}},
  {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":70,"dur":2,"args":{"device":0,"stream":7,"correlation":102}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":90,"dur":5,"args":{"correlation":103}},
  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD","pid":0,"tid":7,"ts":100,"dur":2,"args":{"device":0,"stream":7,"correlation":103}},
  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD","pid":0,"tid":7,"ts":103,"dur":2,"args":{"device":0,"stream":7,"correlation":103}}]})J";

TEST(GraphCaptureAlignment, LaunchKindsAreReadFromTheApiName) {
  EXPECT_EQ(work_kind_of_launch_api("cudaLaunchKernel"), WorkKind::kKernel);
  EXPECT_EQ(work_kind_of_launch_api("cuLaunchKernelEx"), WorkKind::kKernel);
  EXPECT_EQ(work_kind_of_launch_api("cudaLaunchKernelExC_v11060"), WorkKind::kKernel);
  EXPECT_EQ(work_kind_of_launch_api("hipModuleLaunchKernel"), WorkKind::kKernel);
  EXPECT_EQ(work_kind_of_launch_api("cudaMemsetAsync"), WorkKind::kMemset);
  EXPECT_EQ(work_kind_of_launch_api("cudaMemcpyAsync"), WorkKind::kMemcpy);
  EXPECT_EQ(work_kind_of_launch_api("cudaGraphLaunch"), WorkKind::kNone);
  EXPECT_EQ(work_kind_of_launch_api("cudaStreamIsCapturing"), WorkKind::kNone);
}

TEST(GraphCaptureAlignment, UnnamedCudaLaunchesAlignByCaptureWindowAndOrder) {
  std::vector<CaptureTrace> caps;
  caps.push_back(capture_of(kCapture));
  // The warm-up launch ran: not captured. Four captured, in two graphs.
  const auto launches = captured_launches(caps[0], 0);
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_EQ(launches[0].kind, WorkKind::kKernel);
  EXPECT_EQ(launches[2].kind, WorkKind::kMemset);
  EXPECT_FALSE(launches[0].named);

  trace::Trace rep = parse(kReplay);
  const auto links = trace::link_trace(rep);
  GraphAlignment g = align_graph_capture(rep, links, caps);
  ASSERT_EQ(g.captured_graphs.size(), 2u);
  EXPECT_EQ(g.captured_graphs[0].count, 3u);
  EXPECT_EQ(g.captured_graphs[1].count, 1u);
  EXPECT_EQ(g.graph_launches, 4u);
  EXPECT_EQ(g.graph_kernels, 9u);
  EXPECT_EQ(g.attributed, 7u);  // all but the uncaptured graph's two copies
  EXPECT_EQ(g.attributed_to_op, 7u);

  // Each replayed row gets its captured op: gemm → aten::mm (the captured one,
  // not the warm-up), memset → aten::zero_, the lone add → graph 2's aten::add.
  const auto& ct = caps[0].trace;
  auto op_name = [&](uint32_t row) {
    const int32_t li = g.launch_of_row[row];
    return li < 0
               ? std::string("-")
               : std::string(ct.name(static_cast<size_t>(g.launches[static_cast<size_t>(li)].op)));
  };
  EXPECT_EQ(op_name(1), "aten::mm");
  EXPECT_EQ(
      ct.events.ts_ns[static_cast<size_t>(g.launches[static_cast<size_t>(g.launch_of_row[1])].op)],
      22000);
  EXPECT_EQ(op_name(2), "aten::add");
  EXPECT_EQ(op_name(3), "aten::zero_");
  EXPECT_EQ(op_name(5), "aten::mm");
  EXPECT_EQ(op_name(9), "aten::add");
  EXPECT_EQ(
      ct.events.ts_ns[static_cast<size_t>(g.launches[static_cast<size_t>(g.launch_of_row[9])].op)],
      62000);
  EXPECT_EQ(op_name(11), "-");

  // Per graph: how each was attributed and why anything was left.
  std::map<int32_t, GraphReplaySummary> by_graph;
  for (const auto& s : g.graphs) by_graph[s.graph] = s;
  ASSERT_EQ(by_graph.size(), 3u);
  EXPECT_EQ(by_graph[0].method, "launch order");
  EXPECT_EQ(by_graph[0].replays, 2u);
  EXPECT_EQ(by_graph[0].attributed, 6u);
  EXPECT_EQ(by_graph[0].reason, "");
  EXPECT_EQ(by_graph[1].attributed, 1u);
  EXPECT_EQ(by_graph[-1].method, "none");
  EXPECT_EQ(by_graph[-1].kernels, 2u);
  EXPECT_NE(by_graph[-1].reason.find("no captured graph"), std::string::npos);

  // The stage analysis charges the replayed GEMM to the captured aten::mm.
  std::vector<uint32_t> rows{1, 2, 3};
  StageAnalysis a = analyze_stage({{&rep, &links, &caps, &g}, rows, nullptr, nullptr});
  EXPECT_EQ(a.graph_events, 3u);
  EXPECT_EQ(a.graph_events_attributed, 3u);
  std::map<std::string, std::string> cat;
  for (const auto& c : a.calls) cat[c.name] = c.category;
  EXPECT_EQ(cat["aten::mm"], "GEMM");
}

TEST(GraphCaptureAlignment, ReplayWithAnExtraKernelStillAlignsInOrder) {
  std::vector<CaptureTrace> caps;
  caps.push_back(capture_of(kCapture));
  // A replay of graph 1 plus one kernel the capture does not hold (e.g. a
  // launch the profiler dropped at capture time).
  trace::Trace rep = parse(R"J({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":100}},
    {"ph":"X","cat":"kernel","name":"sm90_gemm","pid":0,"tid":7,"ts":10,"dur":4,"args":{"device":0,"stream":7,"correlation":100}},
    {"ph":"X","cat":"kernel","name":"extra","pid":0,"tid":7,"ts":14,"dur":1,"args":{"device":0,"stream":7,"correlation":100}},
    {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":15,"dur":2,"args":{"device":0,"stream":7,"correlation":100}},
    {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":18,"dur":1,"args":{"device":0,"stream":7,"correlation":100}}]})J");
  const auto links = trace::link_trace(rep);
  GraphAlignment g = align_graph_capture(rep, links, caps);
  EXPECT_EQ(g.graph_kernels, 4u);
  EXPECT_EQ(g.attributed, 3u);
  ASSERT_EQ(g.graphs.size(), 1u);
  EXPECT_EQ(g.graphs[0].graph, 0);
  EXPECT_NE(g.graphs[0].reason.find("1 left"), std::string::npos) << g.graphs[0].reason;
}

// One profiler run that recorded the capture and the replays: the trace is
// its own capture trace, no --capture-dir needed.
TEST(GraphCaptureAlignment, TraceHoldingCaptureAndReplayAttributesItself) {
  auto both = nlohmann::json::parse(kCapture);
  const auto replay = nlohmann::json::parse(kReplay);
  for (auto ev : replay["traceEvents"]) {
    ev["ts"] = ev["ts"].get<double>() + 1000;  // replays after the capture
    both["traceEvents"].push_back(ev);
  }
  const auto dir = std::filesystem::temp_directory_path() / "magpie_graph_self_capture";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "trace.json") << both.dump();
  TraceLensOptions o;
  o.trace = dir / "trace.json";
  o.output_dir = dir;
  const TraceLensResult r = run_tracelens(o);
  std::string w;
  for (const auto& x : r.warnings) w += x + "\n";
  ASSERT_TRUE(r.graph_attribution) << w;
  EXPECT_EQ(r.graph_attribution->graph_kernels, 9u);
  EXPECT_EQ(r.graph_attribution->attributed_kernels, 7u);
  EXPECT_EQ(r.graph_attribution->captured_graphs, 2u);
  std::filesystem::remove_all(dir);
}

// Where Kineto records graph node ids on both sides, they pair exactly, even
// when the replay runs the nodes in another order than they were captured.
TEST(GraphCaptureAlignment, GraphNodeIdsPairExactly) {
  std::vector<CaptureTrace> caps;
  caps.push_back(capture_of(R"J({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10,"args":{"External id":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"External id":1,"correlation":1,"graph node id":11}},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":20,"dur":10,"args":{"External id":2}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":21,"dur":1,"args":{"External id":2,"correlation":2,"graph node id":12}}]})J"));
  trace::Trace rep = parse(R"J({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":100}},
    {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":10,"dur":2,"args":{"device":0,"stream":7,"correlation":100,"graph node id":12}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":8,"ts":11,"dur":4,"args":{"device":0,"stream":8,"correlation":100,"graph node id":11}}]})J");
  const auto links = trace::link_trace(rep);
  GraphAlignment g = align_graph_capture(rep, links, caps);
  EXPECT_EQ(g.attributed, 2u);
  const auto& ct = caps[0].trace;
  EXPECT_EQ(ct.name(static_cast<size_t>(g.launches[static_cast<size_t>(g.launch_of_row[1])].op)),
            "aten::add");
  EXPECT_EQ(ct.name(static_cast<size_t>(g.launches[static_cast<size_t>(g.launch_of_row[2])].op)),
            "aten::mm");
  ASSERT_EQ(g.graphs.size(), 1u);
  EXPECT_EQ(g.graphs[0].method, "graph node ids");
}

}  // namespace
}  // namespace magpie::analysis
