#pragma once
// One stage's GPU work as op calls and groups, each with its perf model and
// roofline: the numbers behind every TraceLens-style table.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/gpu_arch.hpp"
#include "analysis/gpu_timeline.hpp"
#include "analysis/op_attribution.hpp"
#include "analysis/perf_model.hpp"
#include "analysis/step_annotation.hpp"
#include "sources/kernel_name.hpp"

namespace magpie::analysis {

// One call of an op and the GPU work it launched in the stage.
struct OpCall {
  OpRef op;              // invalid for kernels no op is known for
  std::string name;      // op name; for unattributed work the launch API or kernel name
  std::string category;  // GEMM, SDPA_fwd, ..., other, unattributed, graph_replay
  std::string input_dims, input_type, concrete_inputs;
  std::optional<OpCost> cost;
  std::vector<uint32_t> gpu_rows;
  double kernel_us = 0;  // Σ durations of its GPU work
  // Calls with equal `signature` (≥ 0) have equal category, name and arguments
  // (the same op name and argument set of one trace): grouping looks their
  // strings up once per signature. -1 for calls without an op.
  int32_t signature = -1;
};

// The roofline of work on one arch; empty `bound` when there is no model or no arch.
struct RooflineFigures {
  std::string compute_spec;  // "matrix_bf16", ...
  double peak_tflops = 0;
  double mem_bw_tbps = 0;
  RooflinePoint point;
};

// Why measured rates are above what the device can do, or "" when they are not:
// an achieved TFLOP/s above the compute peak for the dtype and units (the FLOPs
// or the kernels counted for the op are wrong for it), or an achieved TB/s above
// the memory bandwidth (operands served from cache, or the bytes overcounted).
// Rows with such rates carry this text in their "Peak Check" column.
std::string peak_check(const RooflineFigures& f, double achieved_tflops, double achieved_tbps);

// Calls with the same category, op name and recorded arguments.
struct OpGroup {
  std::string category, name, input_dims, input_type, concrete_inputs;
  std::optional<OpCost> cost;  // per call
  size_t calls = 0;
  size_t kernels = 0;  // GPU events over all calls
  std::vector<double> call_us;
  double total_us = 0;
  RooflineFigures first;  // the roofline of the first call (all calls share the model)
  double mean_achieved_tflops = 0, mean_achieved_tbps = 0, mean_pct_roofline = 0;
  // Calls whose rates exceed the device's peak, and why (peak_check of the
  // fastest such call); empty when none does.
  size_t calls_above_peak = 0;
  std::string above_peak;
};

// One kernel name, with the roofline of the calls where it was its op's only kernel.
struct KernelGroup {
  std::string name;
  std::vector<double> durations_us;
  double total_us = 0;
  std::map<std::string, size_t> ops;  // reported op → kernels
  size_t modelled = 0;                // single-kernel calls with a model
  std::string compute_spec, bound;
  double arithmetic_intensity = 0, roofline_time_us = 0;
  double mean_achieved_tflops = 0, mean_achieved_tbps = 0, mean_pct_roofline = 0;
  size_t modelled_above_peak = 0;  // single-kernel calls whose rates exceed the peak
  std::string above_peak;          // why, as OpGroup::above_peak
};

struct StageAnalysis {
  std::vector<OpCall> calls;
  std::vector<OpGroup> groups;  // by total time, descending
  std::vector<KernelGroup> kernels;
  double total_gpu_us = 0;  // Σ durations of every GPU event of the stage
  GpuTimeline timeline;
  size_t gpu_events = 0;
  size_t unattributed_events = 0;  // no op known
  size_t graph_events = 0;         // replayed from graphs
  size_t graph_events_attributed = 0;
  size_t ops_without_shapes = 0;  // calls of ops that recorded no Input Dims
  size_t groups_above_peak = 0;   // op groups with a call above the device's peak
};

struct StageInputs {
  AttributionSources sources;
  std::span<const uint32_t> gpu_rows;  // rows of sources.trace
  const StepAnnotation* step = nullptr;
  const GpuArch* arch = nullptr;  // nullptr: no roofline columns
};

RooflineFigures roofline_on(const GpuArch* arch, const OpCost& cost, double measured_us);
// TraceLens-style category of a modelled op: GEMM, SDPA_fwd, CONV_fwd, MoE_fused,
// UnaryElementwise, BinaryElementwise, reduce, softmax, NORM_fwd, KV_cache.
std::string op_category(const OpCost& cost);

// The category of an op without a model (no recorded shapes, or arguments the
// model does not take), from its name and else from its kernels' categories, so
// that the op tables agree with kernel_summary: GEMM, CONV_fwd, CONV_bwd,
// SDPA_fwd, communication, ...; "other" when neither says.
std::string op_category_by_name(std::string_view op_name,
                                std::span<const sources::KernelCategory> kernel_categories);

StageAnalysis analyze_stage(const StageInputs& in);

}  // namespace magpie::analysis
