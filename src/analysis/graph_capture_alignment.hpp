#pragma once
// CUDA/HIP graph replays show their kernels under one graph-launch call, with
// no op that launched them. The graph-capture trace recorded the launch calls
// under those ops while the graph was built; aligning the two gives each
// replayed kernel its op back. Two kinds of capture trace:
//  - launch calls that name their kernel (HIP runtime events carry
//    args.kernel; vLLM's capture traces): aligned by kernel name, in order;
//  - launch calls that name nothing (CUDA: cudaLaunchKernel / cuLaunchKernel /
//    cudaMemsetAsync recorded during torch.cuda.graph capture, whose kernels
//    never ran, so the trace has no kernel events for them): each capture
//    (between Begin/EndCapture calls, else the whole trace) is one graph; a
//    replay is matched to the capture with the same sequence of work kinds
//    (kernel, memset, memcpy), then aligned call by call, in order.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

struct CaptureTrace {
  trace::Trace trace;
  trace::TraceLinks links;
};

// What a launch call puts on the GPU.
enum class WorkKind : uint8_t { kKernel, kMemset, kMemcpy, kNone };
// cudaLaunchKernel, cuLaunchKernelEx, hipModuleLaunchKernel… → kernel;
// cudaMemsetAsync → memset; cudaMemcpyAsync → memcpy; anything else → none.
WorkKind work_kind_of_launch_api(std::string_view api);

// One launch recorded while a graph was being captured.
struct CapturedLaunch {
  uint32_t capture = 0;  // index into the capture traces
  uint32_t row = 0;      // the launch API row in that trace
  int32_t op = -1;       // the cpu_op around it there, -1 if none
  WorkKind kind = WorkKind::kKernel;
  bool named = false;  // the call names its kernel (args.kernel)
  int32_t graph = -1;  // index into GraphAlignment::captured_graphs; -1 for named launches
};

// One graph as captured: a contiguous run of GraphAlignment::launches.
struct CapturedGraph {
  uint32_t capture = 0;
  size_t first = 0, count = 0;  // range in `launches`
  int64_t begin_ns = 0, end_ns = 0;
};

// How the replays of one captured graph (or, by name, of all) were attributed.
struct GraphReplaySummary {
  int32_t graph = -1;  // captured graph; -1: aligned by kernel name, or matched to none
  std::string method;  // "kernel names", "launch order", "none"
  size_t replays = 0;  // graph launches
  size_t kernels = 0;  // GPU events they replayed
  size_t attributed = 0;
  std::string reason;  // why anything was left, "" when all were attributed
};

struct GraphAlignment {
  std::vector<CapturedLaunch> launches;  // all captures' launches, in order
  std::vector<CapturedGraph> captured_graphs;
  std::vector<int32_t> launch_of_row;  // replay row → index into `launches`, or -1
  size_t graph_launches = 0;           // graph launch calls in the replay
  size_t graph_kernels = 0;            // GPU events they replayed
  size_t attributed = 0;               // of those, matched to a captured launch
  size_t attributed_to_op = 0;         // ... whose launch sits inside a cpu_op
  std::vector<GraphReplaySummary> graphs;
  std::vector<std::string> warnings;
};

// Whether the trace recorded a stream capture (a Begin/EndCapture call pair).
bool has_capture_window(const trace::Trace& trace);

// Captured launches of one trace, in time order, with the innermost cpu_op
// around each: launch calls that name their kernel, and launch calls (kernel,
// memset, memcpy) whose work never ran in this trace (it was captured).
std::vector<CapturedLaunch> captured_launches(const CaptureTrace& capture, uint32_t index);

// Named launches: for each graph launch of `replay` (in time order), finds
// where its kernel sequence starts (the candidate agreeing on most of its first
// 16 names, searching forward from the previous graph's end first), then walks
// both in order, skipping at most 32 unmatched captured launches.
// Unnamed launches: see the header comment.
GraphAlignment align_graph_capture(const trace::Trace& replay, const trace::TraceLinks& links,
                                   const std::vector<CaptureTrace>& captures);

}  // namespace magpie::analysis
