#pragma once
// The critical path of a rank, per iteration (ProfilerStep#N, engine step
// annotations, the op-pattern fallback of the stage splitter) and over the
// whole window: walking back from the last event along the edges that set
// each start, the chain of host work, launch latency, GPU work, sync waits and
// idle time that decided how long it took. Also HTA-style GPU idle and launch
// statistics. docs/CRITICAL_PATH.md explains every number.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/critical_path_graph.hpp"
#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

// What a piece of the path was. Every ns of a path is in exactly one.
enum class PathCategory : uint8_t {
  kCpu,         // host work: op self time, runtime calls other than launches, untraced host time
  kLaunch,      // launch calls on the path and the latency from a launch to its work's start
  kGpu,         // kernels, copies, sets
  kSync,        // a blocking call's own time on the path (after the GPU work it waited for)
  kCollective,  // NCCL/RCCL kernels (their time includes waiting for the other ranks)
  kIdle,        // neither side busy: gaps on a stream the edges do not explain, waiting threads
};
inline constexpr size_t kPathCategories = 6;
const char* to_string(PathCategory c);

// Re-timed start and end of every node (critical_path_whatif.hpp changes the inputs).
struct Schedule {
  std::vector<int64_t> start_ns, end_ns;
};

// Changes to the graph's weights for one re-timing; an empty vector keeps the graph's.
struct Timing {
  std::vector<int64_t> cost_ns;  // per node: own time (a sync: its floor)
  std::vector<int64_t> prev_w;   // per node
  // Per node: bit 1 drops the launch/sync edge, bit 2 the stream-wait edge,
  // bit 4 the floor from the other ranks (floor_end).
  std::vector<uint8_t> cut;
};

// Earliest times the edges allow, in topological order. The first node of a
// lane keeps its recorded start. With an empty Timing it reproduces the trace.
Schedule retime(const DependencyGraph& g, const Timing& timing = {});
// The same into `s`, reusing its storage (repeated re-timings of one graph).
void retime(const DependencyGraph& g, const Timing& timing, Schedule& s);

struct PathPiece {
  int32_t node = kNoNode;  // kNoNode: idle with no node (before the lane's first event)
  int64_t start_ns = 0, end_ns = 0;
  PathCategory category = PathCategory::kIdle;
};

// One window's critical path, in time order, clipped to [start_ns, end_ns].
struct CriticalPath {
  std::string label;  // "ProfilerStep#3", "decode_step_2", "whole trace"
  std::string stage;  // "decode", "prefill", ... ("" when unknown)
  int64_t start_ns = 0, end_ns = 0;
  std::vector<PathPiece> pieces;
  std::array<int64_t, kPathCategories> by_category{};
  // Of the collective time: waiting for the last rank to arrive (only where
  // the ranks were linked, critical_path_ranks.hpp).
  int64_t collective_wait_ns = 0;
  int64_t length_ns() const { return end_ns - start_ns; }
};

// The window an iteration occupies and the nodes that belong to it.
struct PathWindow {
  std::string label, stage;
  int64_t start_ns = 0, end_ns = 0;
  int32_t anchor = kNoNode;  // first node of the launching thread in the window
  int32_t last = kNoNode;    // the node that ends last (the walk starts there)
  std::vector<int32_t> nodes;  // the launching thread's nodes in the window and its GPU work
};

// Iterations from the stage splitter (whole window when it finds none); the
// first entry is always the whole window.
std::vector<PathWindow> path_windows(const trace::Trace& trace, const trace::TraceLinks& links,
                                     const DependencyGraph& g, std::vector<std::string>& warnings);

// Host pieces by end time on one schedule: where a waiting thread's path goes
// on (critical_path builds it on first need; share one across windows).
using WakeIndex = std::vector<std::pair<int64_t, int32_t>>;
WakeIndex wake_index(const DependencyGraph& g, const Schedule& s);

// Walks back from the window's last-ending node on `s` (the recorded schedule
// or a re-timed one). A given `wake` must be wake_index(g, s) and is only
// read (walks may then run on several threads); without one it is built here
// on first need.
CriticalPath critical_path(const DependencyGraph& g, const Schedule& s, const PathWindow& window,
                           WakeIndex* wake = nullptr);
// The window's start and end on a re-timed schedule (anchor's start, latest end of its nodes).
std::pair<int64_t, int64_t> window_span(const Schedule& s, const PathWindow& window);

PathCategory category_of(const trace::Trace& trace, const DependencyGraph& g, int32_t node);

// Critical-path time per name beside the kernel time of that name.
struct NameShare {
  std::string name;
  int64_t path_ns = 0;    // on the path (host and GPU)
  int64_t path_gpu_ns = 0;
  int64_t kernel_ns = 0;  // all GPU time of this name (op: its GPU work) in the window
  size_t calls = 0;       // GPU events (kernels) or host calls
};

// HTA's idle breakdown of a stream: gaps before each GPU event, split by why.
struct IdleBreakdown {
  int64_t device = 0, stream = 0;
  int64_t busy_ns = 0;
  int64_t host_wait_ns = 0;    // launched only after the stream went idle
  int64_t kernel_wait_ns = 0;  // queued: the gap between work issued back to back
  int64_t other_ns = 0;        // queued but held back (stream waits, unknown)
};

struct LaunchStats {
  size_t launches = 0;              // GPU events with a launch call
  double delay_p50_us = 0, delay_p90_us = 0, delay_p99_us = 0, delay_max_us = 0;  // launch → start
  double launch_call_p50_us = 0;    // CPU time of one launch call
  double kernel_p50_us = 0;         // GPU time of one launched event
  size_t short_kernels = 0;         // GPU time shorter than its launch call
  double short_kernel_us = 0;
  double launch_latency_us = 0;     // graph's estimate onto an idle stream
};

struct CriticalPathReport {
  std::string trace_path;
  int rank = -1;
  std::vector<CriticalPath> paths;  // [0] the whole window, then each iteration
  std::vector<NameShare> ops;       // over the whole window's path, most path time first
  std::vector<NameShare> kernels;
  std::vector<IdleBreakdown> idle;
  LaunchStats launch;
  GraphStats graph;
  std::string bound;  // "CPU-bound", "GPU-bound", "launch-bound", "sync-bound", ...
  std::vector<std::string> warnings;
};

// Name of what a node was: the op around host time, the kernel name on the GPU.
std::string node_name(const trace::Trace& trace, const DependencyGraph& g, int32_t node);

CriticalPathReport analyze_critical_path(const trace::Trace& trace, const trace::TraceLinks& links,
                                         const DependencyGraph& g,
                                         const std::vector<PathWindow>& windows);

}  // namespace magpie::analysis
