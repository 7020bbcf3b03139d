#pragma once
// The dependency graph of one rank's trace, built once from the ingested
// tables and their links (trace_links): what had to finish before each piece
// of work could start. The critical path (critical_path.hpp) walks it and the
// what-if (critical_path_whatif.hpp) re-times it; neither re-derives it.
//
// Nodes are pieces of time on one lane:
//  - on a CPU thread, the thread's timeline cut where CPU events begin and
//    end: each piece belongs to the innermost event around it (an op's self
//    time, a launch call, a synchronizing call) or to no event (host time the
//    profiler did not record: Python between ops);
//  - on a GPU stream, one kernel, copy or set.
// Edges, each with a weight in ns:
//  - lane order: a CPU piece starts where the one before it on its thread
//    ends; GPU work starts after the work before it on its stream, plus a gap;
//  - launch: GPU work starts after its launch call started, plus the launch
//    latency (a graph launch → every kernel it replays);
//  - sync: a call that blocks the CPU until the GPU is done (cudaDeviceSynchronize,
//    cudaStreamSynchronize, cudaEventSynchronize, blocking copies such as
//    .item()) ends after the GPU work it waited for ends;
//  - stream wait: GPU work after a cudaStreamWaitEvent starts after the work
//    recorded by the cudaEventRecord before it, when that ran on another stream.
// Weights are chosen so that re-timing the unchanged graph gives back every
// recorded time exactly: each node has one binding edge whose weight is the
// measured one, and the other edges carry physical lower bounds no larger
// than measured (docs/CRITICAL_PATH.md, "The dependency graph").
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

enum class NodeKind : uint8_t {
  kCpu,       // self time of a CPU event (cpu_op, annotation, other runtime calls)
  kUntraced,  // host time inside no recorded event (Python between ops)
  kIdle,      // host time without any event for ≥ 1 ms: the thread waited
  kLaunch,    // a runtime/driver call that launched GPU work
  kSync,      // a call that blocked until GPU work was done
  kGpu,       // a kernel, copy or set
};
const char* to_string(NodeKind k);

struct GraphLane {
  bool gpu = false;
  int64_t pid = 0;  // CPU: process; GPU: device
  int64_t tid = 0;  // CPU: thread; GPU: stream
};

inline constexpr int32_t kNoNode = -1;

// Where the spacing of kernels replayed from a CUDA graph (launch:0) comes
// from, best first: the user's measurement, kernels replayed from a graph in
// this trace, a figure measured on this GPU model, or (worst: eager kernels
// sit further apart than graph kernels) the eager queued gap of this trace.
enum class GraphGapSource : uint8_t { kOption, kTraceGraphReplay, kGpuModel, kEagerQueue };
const char* to_string(GraphGapSource s);

// The gap a CUDA graph leaves between consecutive kernels, measured without the
// profiler by examples/critical_path/graph_gap.py on GPUs we ran it on; -1 for
// others. `device_name` as Kineto writes it ("NVIDIA H100 80GB HBM3").
int64_t measured_graph_gap_ns(std::string_view device_name);

struct GraphStats {
  size_t cpu_nodes = 0;
  size_t gpu_nodes = 0;
  size_t launch_edges = 0;
  size_t sync_edges = 0;
  size_t stream_wait_edges = 0;
  size_t gpu_without_launch = 0;   // GPU work whose launch call is not in the trace
  size_t launch_after_start = 0;   // GPU work that began before its launch call (clock skew)
  size_t overlapping_spans = 0;    // CPU events that end after the event around them
  size_t cycle_edges_dropped = 0;  // edges removed to break a cycle
  int64_t launch_latency_ns = 0;   // median latency of launches onto an idle stream
  int64_t back_to_back_gap_ns = 0; // median gap between queued GPU work on a stream
  // The gap launch:0 (CUDA graphs) leaves between kernels, and where it came from.
  int64_t graph_gap_ns = 0;
  GraphGapSource graph_gap_source = GraphGapSource::kEagerQueue;
  size_t graph_gap_samples = 0;    // gaps measured between graph-replayed kernels of this trace
  size_t cross_rank_edges = 0;     // collectives with a floor from the other ranks (critical_path_ranks.hpp)
};

struct DependencyGraph {
  // One entry per node.
  std::vector<int64_t> start_ns;  // as recorded
  std::vector<int64_t> end_ns;
  std::vector<int64_t> cost_ns;   // own time when nothing waits: end − start, a sync's floor
  std::vector<int32_t> row;       // the event the node belongs to, -1 for untraced host time
  std::vector<NodeKind> kind;
  std::vector<uint32_t> lane;
  std::vector<int32_t> prev;      // previous node on the lane
  std::vector<int64_t> prev_w;    // GPU: least gap after `prev` ends; CPU: 0
  std::vector<int32_t> dep;       // GPU: launch node (edge from its start); sync: GPU node (from its end)
  std::vector<int64_t> dep_w;
  std::vector<int32_t> wait;      // GPU: node on another stream it waited for (from its end)
  std::vector<int64_t> wait_w;
  // GPU: the earliest end the other ranks allow (a collective cannot finish
  // before the last rank arrived), INT64_MIN for none; empty when no node has one.
  std::vector<int64_t> floor_end;
  std::vector<int32_t> op;        // innermost cpu_op row around the node (GPU: launching op), -1

  std::vector<uint32_t> order;    // a topological order of the nodes
  std::vector<GraphLane> lanes;
  std::vector<int32_t> node_of_gpu_row;  // event row → its GPU node, else -1 (empty if no GPU)
  int32_t main_lane = -1;         // the CPU thread that launches the most GPU work
  GraphStats stats;
  std::vector<std::string> warnings;

  size_t size() const { return start_ns.size(); }
};

// Builds the graph of one rank. Never throws on odd input: missing
// correlations, clock skew and cycles leave edges out and say so in warnings.
DependencyGraph build_dependency_graph(const trace::Trace& trace, const trace::TraceLinks& links);

// Whether a runtime/driver call blocks the CPU until GPU work is done by its
// name alone (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize,
// cudaMemcpy, and their HIP and driver-API peers).
bool is_blocking_call(std::string_view api_name);

}  // namespace magpie::analysis
