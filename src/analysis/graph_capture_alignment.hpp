#pragma once
// CUDA/HIP graph replays show their kernels under one graph-launch call, with
// no op that launched them. The graph-capture trace recorded the launches
// (with args.kernel) under those ops when the graph was built; aligning the
// two by kernel name, in order, gives each replayed kernel its op back.
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

// One kernel launch recorded while a graph was being captured.
struct CapturedLaunch {
  uint32_t capture = 0;  // index into the capture traces
  uint32_t row = 0;      // the launch API row in that trace
  int32_t op = -1;       // the cpu_op around it there, -1 if none
};

struct GraphAlignment {
  std::vector<CapturedLaunch> launches;  // all captures' launches, in order
  std::vector<int32_t> launch_of_row;    // replay row → index into `launches`, or -1
  size_t graph_launches = 0;             // graph launch calls in the replay
  size_t graph_kernels = 0;              // GPU events they replayed
  size_t attributed = 0;                 // of those, matched to a captured launch
  size_t attributed_to_op = 0;           // ... whose launch sits inside a cpu_op
  std::vector<std::string> warnings;
};

// Captured launches of one trace: launch API rows that carry args.kernel, in
// time order, with the innermost cpu_op around each.
std::vector<CapturedLaunch> captured_launches(const CaptureTrace& capture, uint32_t index);

// For each graph launch of `replay` (in time order), finds where its kernel
// sequence starts in the captured launches (the candidate agreeing on most of
// its first 16 names, searching forward from the previous graph's end first),
// then walks both in order, skipping at most 32 unmatched captured launches.
GraphAlignment align_graph_capture(const trace::Trace& replay, const trace::TraceLinks& links,
                                   const std::vector<CaptureTrace>& captures);

}  // namespace magpie::analysis
