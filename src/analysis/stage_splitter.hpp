#pragma once
// Inference-mode stage split: find the engine's iterations in a rank-0 trace,
// give each a stage (prefilldecode, decode, prefill), and pick one
// steady-state iteration per stage for the reports, saying why.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/step_annotation.hpp"
#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

struct Iteration {
  Stage stage = Stage::kUnknown;
  StepAnnotation step;       // grammar "pattern" when found by the op-pattern fallback
  std::string marker;        // the annotation's name, or what the pattern started with
  std::string stage_source;  // "annotation" or how the stage was inferred
  int64_t start_ns = 0;      // host-side window: GPU work launched inside it belongs here
  int64_t end_ns = 0;
  std::vector<uint32_t> gpu_rows;  // kernels, copies and sets, in time order
  double gpu_duration_us = 0;      // first GPU start → last GPU end
  double gpu_busy_us = 0;          // union of the GPU intervals
};

struct StagePick {
  Stage stage = Stage::kUnknown;
  size_t iteration = 0;  // index into StageSplit::iterations
  size_t candidates = 0;
  std::string selection_reason;
};

struct StageSplit {
  std::string method;  // e.g. "annotations (vllm)", "annotations (step_name) + op pattern"
  std::vector<Iteration> iterations;  // in time order
  std::vector<StagePick> picks;       // prefilldecode, decode, prefill order; found ones only
  std::vector<std::string> warnings;
};

// Per stage: the iterations of the largest batch, then the median by GPU busy
// time (TraceLens's steady-state pick, without its phase_avg_conc step: a
// single trace has no per-iteration concurrency). `num_steps` > 0 keeps only
// the last num_steps iterations of each stage as candidates (Magpie's
// profiler.tracelens.num_steps: the steady state after warm-up).
StageSplit split_stages(const trace::Trace& trace, const trace::TraceLinks& links,
                        size_t num_steps = 0);

// Every GPU event of the trace as one iteration (stage kUnknown): what inference
// mode reports when no iteration has a stage.
Iteration whole_trace_iteration(const trace::Trace& trace);

// The stage and batch of one forward pass judged from its token-id input: the
// first aten::embedding in [start, end) with ids [B, S] is a prefill when
// S > 1, else a decode. Flattened ids ([T], vLLM/SGLang) give kUnknown.
struct TokenGuess {
  Stage stage = Stage::kUnknown;
  int64_t batch = 0;
  int64_t tokens = 0;
  std::string why;
};
TokenGuess guess_stage_from_tokens(const trace::Trace& trace, int64_t start_ns, int64_t end_ns);

}  // namespace magpie::analysis
