#pragma once
// Links between events: GPU work → the host call that launched it (by
// args.correlation, one graph launch → many kernels), and the per-thread
// nesting of CPU events (the op tree).
#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/trace.hpp"

namespace magpie::trace {

bool is_graph_launch(std::string_view api_name);  // cudaGraphLaunch, hipGraphLaunch, cuGraphLaunch

struct LinkSummary {
  size_t gpu_events = 0;         // kernel + memcpy + memset rows
  size_t linked_gpu_events = 0;  // with a launch API row found by correlation
  size_t graph_launches = 0;     // graph launch calls that replayed ≥ 1 GPU event
  size_t graph_kernels = 0;      // GPU events replayed by those launches
  size_t max_kernels_per_graph_launch = 0;
};

struct TraceLinks {
  std::vector<int32_t> launch_of;  // GPU activity row → launch API row, else -1
  std::vector<int32_t> parent;     // CPU row → innermost enclosing CPU row on its thread, else -1
  std::vector<int32_t> op_by_external_id_row;  // GPU row → cpu_op row sharing its External id, else -1
  LinkSummary summary;
};

TraceLinks link_trace(const Trace& trace);

// The trace's links: those the ingest built, else built now and kept in the
// trace (not thread-safe on first use: call it before sharing a trace).
const TraceLinks& links_of(const Trace& trace);

// The cpu_op that launched GPU row `row`: the op with the same External id,
// else the innermost cpu_op around its launch call. -1 when unknown.
int32_t launching_op(const Trace& trace, const TraceLinks& links, size_t row);

}  // namespace magpie::trace
