#pragma once
// magpie replay: pick CPU ops out of a PyTorch profiler (Kineto) trace
// recorded with record_shapes=True — by name and shapes, or the top-k by the
// GPU time their kernels took — and turn each into a standalone bench_target
// module that rebuilds the recorded inputs and calls the op. The plan is
// typed (ReplayOutcome); replay_writer.hpp writes it out. docs/REPLAY.md.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/critical_path_advice.hpp"
#include "replay/op_arguments.hpp"
#include "replay/op_table.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace.hpp"

namespace magpie::replay {

// --op NAME[:SHAPES]: "aten::mm", "mm", "aten::mm:[[16,4096],[4096,4096]]".
// SHAPES lists the shapes of the first tensor arguments (a prefix is enough).
struct OpQuery {
  std::string name;  // always with its namespace ("aten::mm")
  std::optional<std::vector<std::vector<int64_t>>> shapes;
  std::string text;  // as given
};
// Throws Error(kUsage) naming the fix for malformed text.
OpQuery parse_op_query(std::string_view text);

struct ReplayRequest {
  std::filesystem::path trace_path;
  std::vector<OpQuery> ops;  // by name; with top_k > 0, the top_k signatures of each
  int top_k = 0;             // without ops: the top_k ops of the whole trace by GPU time
  std::filesystem::path output_dir = "./replay";
  trace::IngestOptions ingest;
};

// One recorded call signature: the op and its four shape args, as text.
struct OpSignature {
  std::string name;
  std::string input_dims, input_type, input_strides, concrete_inputs;
};

struct KernelCost {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
};

// What the trace says the op cost: the GPU work its calls launched (kernels,
// copies, sets), attributed as in src/analysis/op_attribution.
struct OpCost {
  int64_t calls = 0;  // cpu_op events of this signature
  int64_t calls_with_gpu_work = 0;
  int64_t kernel_count = 0;
  int64_t total_ns = 0;
  int64_t cpu_total_ns = 0;         // host time of the calls (their own durations)
  std::vector<KernelCost> kernels;  // most time first
  double mean_ns_per_call() const {
    return calls ? static_cast<double>(total_ns) / static_cast<double>(calls) : 0;
  }
};

struct ReplayTarget {
  int rank = 0;      // 1 = most GPU time among the selected
  std::string slug;  // output folder: "01_aten_mm"
  OpSignature signature;
  const OpDescriptor* op = nullptr;
  std::vector<OpArgument> arguments;
  OpCost cost;
  double share_of_gpu_time = 0;  // total_ns / the trace's GPU time
  bool runs_on_cpu = true;
  std::string cpu_reason;
  std::vector<std::string>
      notes;  // assumptions the module makes (TensorList dtype, out-of-place, ...)
  // Least DRAM traffic and work of one call (src/analysis perf model), for the
  // roofline floor of `magpie compare`; 0 = no floor (see roofline_floor()).
  double min_bytes = 0;
  double min_flops = 0;
  std::string module_text;  // baseline.py (candidate.py starts as a copy)
};

struct SkippedOp {
  int rank = 0;
  OpSignature signature;
  OpCost cost;
  std::string reason;
};

// A selected op (replayed or not) placed by what it could buy end to end.
struct EndToEndRank {
  int kernel_rank = 0;  // ReplayTarget::rank / SkippedOp::rank: its place by GPU time
  std::string op, arguments;
  int64_t kernel_ns = 0;
  std::optional<int64_t> gain_ns;  // end to end with the GPU work of every call of the op name at zero (a bound)
};

struct ReplayOutcome {
  std::string trace_path;
  std::string selection;        // "top 10 ops by GPU time" | "--op aten::mm"
  int64_t trace_gpu_ns = 0;     // all GPU work in the trace
  int64_t unattributed_ns = 0;  // GPU work with no CPU op found
  int64_t graph_replayed_kernels = 0;
  bool ranked_by_host_time = false;  // --top-k on a trace without GPU work (a CPU run)
  std::vector<ReplayTarget> targets;
  std::vector<SkippedOp> skipped;  // selected but not replayable, each with why
  // With --top-k on a trace with GPU work: the critical path, its ranked fixes
  // (host fixes first on a host-bound trace), and the selected ops by
  // predicted end-to-end gain (docs/OPTIMIZATION_LOOP.md).
  std::optional<analysis::CriticalPathSummary> critical_path;
  std::vector<EndToEndRank> by_end_to_end_gain;
  std::vector<std::string> warnings;
};

// The plan for an ingested trace. Throws Error(kUsage) for a request without
// ops or top-k, Error(kNotFound) when --op names an op the trace does not have
// (the message lists the ops with most GPU time), Error(kNoGpuEvents) for
// top-k on a trace with no replayable op. On a trace without GPU work (a CPU
// run) --top-k ranks the innermost replayable ops by their host time.
ReplayOutcome plan_replay(const trace::Trace& trace, const ReplayRequest& request);

// Loads request.trace_path (Kineto JSON, gzip or not) and plans.
ReplayOutcome run_replay(const ReplayRequest& request);

}  // namespace magpie::replay
