#pragma once
// A structural diff of two traces of one workload (before and after a
// change): ops matched by their place in the op tree, kernels by the op that
// launched them, each with its change in calls, host time and GPU time; and
// the end-to-end change (whole window, median iteration) explained by how
// each side's critical path changed: its category breakdown and the ops
// whose time on the path moved most. Pure: two ingested traces in, the diff
// out. docs/TRACE_DIFF.md explains every number.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/critical_path.hpp"
#include "trace/trace.hpp"

namespace magpie::analysis {

// The name a match is made on: template arguments dropped ("f<float, 4>" →
// "f<>"), digit runs not glued to a letter read as N ("ProfilerStep#3",
// "triton_poi_fused_gelu_0", "Torch-Compiled Region: 0/1"), long mixed
// letter-digit tokens (compiled-graph hashes) read as *. "sm90" and
// "conv2d" keep their digits.
std::string normalised_name(std::string_view name);

enum class DiffStatus : uint8_t { kUnchanged, kChanged, kAdded, kRemoved, kMoved };
const char* to_string(DiffStatus s);

struct TraceDiffOptions {
  // A matched row is "changed" when its call count differs, or its host or
  // GPU time moved by more than both of these.
  double changed_fraction = 0.10;
  int64_t changed_min_ns = 1000;
};

// One place in the op tree: an op name under its parent path, with its input
// shapes. Repeated calls at one place pair in order; the unpaired rest are
// the added (or removed) calls.
struct OpDiffRow {
  std::string name_before, name_after;  // as recorded (empty on the side without it)
  std::string parent;                   // normalised names of the enclosing ops, " > " between
  std::string shapes;                   // "Input Dims" as recorded ("" when not recorded)
  int depth = 0;
  size_t calls_before = 0, calls_after = 0;
  size_t paired_calls = 0;
  int64_t host_before_ns = 0, host_after_ns = 0;  // the ops' own durations, children included
  int64_t gpu_before_ns = 0, gpu_after_ns = 0;    // GPU work launched inside them, children included
  DiffStatus status = DiffStatus::kUnchanged;
  const std::string& name() const { return name_before.empty() ? name_after : name_before; }
};

// GPU work (kernels, copies, sets) of one name launched at one op place. A
// kernel only in BEFORE and one of the same name only in AFTER, launched
// from different places, pair as "moved" (eager → CUDA graph moves every kernel
// under the graph launch).
struct KernelDiffRow {
  std::string name_before, name_after;
  std::string op_before, op_after;  // the launching op's place: "parent > name"; "(no op)"
  size_t calls_before = 0, calls_after = 0;
  int64_t gpu_before_ns = 0, gpu_after_ns = 0;
  DiffStatus status = DiffStatus::kUnchanged;
  const std::string& name() const { return name_before.empty() ? name_after : name_before; }
};

using CategoryTimes = std::array<int64_t, kPathCategories>;

struct SideSummary {
  std::string path;
  int rank = -1;
  std::string device;  // the first GPU's name ("" when the trace names none)
  size_t ops = 0;
  size_t gpu_events = 0;
  int64_t gpu_ns = 0;
  std::string bound;  // critical_path.hpp's class: "CPU-bound", "GPU-bound", ...
  // The whole window's critical path and its breakdown.
  int64_t window_ns = 0;
  CategoryTimes window{};
  // Iterations (ProfilerStep#N / step annotations): count, the median
  // iteration (the lower middle one for an even count), its length and its
  // breakdown (which sums to that length), and the mean length.
  size_t iterations = 0;
  std::string median_step;  // its label: "ProfilerStep#4"
  int64_t median_step_ns = 0;
  CategoryTimes step{};
  int64_t mean_step_ns = 0;
};

// Critical-path time of one (normalised) op or kernel name on each side.
struct PathShareDelta {
  std::string name;
  int64_t path_before_ns = 0, path_after_ns = 0;
  int64_t gpu_before_ns = 0, gpu_after_ns = 0;  // all GPU time of that name
  int64_t delta_ns() const { return path_after_ns - path_before_ns; }
};

struct TraceDiff {
  SideSummary before, after;
  std::vector<OpDiffRow> ops;          // most change first
  std::vector<KernelDiffRow> kernels;  // most change first
  std::vector<PathShareDelta> path_ops;      // whole window, most |Δ path time| first
  std::vector<PathShareDelta> path_kernels;
  // Op names on the median iterations' paths (gpu_*_ns: 0); empty unless both sides have iterations.
  std::vector<PathShareDelta> path_ops_step;
  bool shapes_used = true;  // false: a side recorded no shapes, ops matched without them
  std::vector<std::string> warnings;

  size_t count_ops(DiffStatus s) const;
  size_t count_kernels(DiffStatus s) const;
};

// Never throws on odd input: traces of different ranks or GPUs, a CPU-only
// side, missing shapes or an empty window give a warning and what can be
// compared.
TraceDiff diff_traces(const trace::Trace& before, const trace::Trace& after, const TraceDiffOptions& options = {});

}  // namespace magpie::analysis
