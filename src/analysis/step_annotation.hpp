#pragma once
// The step annotations inference engines put around one scheduler iteration
// (docs/REFERENCE_FACTS.md §2), parsed into what the stage splitter and the attention
// perf models need: which stage the step is, its batch, and its token counts.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace magpie::analysis {

enum class Stage : uint8_t { kPrefillDecode, kDecode, kPrefill, kUnknown };
// Magpie's stage keys: "prefilldecode", "decode", "prefill" ("unknown").
std::string_view to_string(Stage s);
// File labels Magpie uses: "prefilldecode", "decode_only", "prefill_only".
std::string_view output_label(Stage s);
// "prefilldecode", "decode", "prefill" and Magpie's aliases (pd, mixed,
// prefill_decode, decode_only, prefill_only); nullopt otherwise.
std::optional<Stage> parse_stage(std::string_view name);

// Token counts of one side (context or generation) of a vLLM step:
// requests, Σq, Σk, Σq², Σq·k over its sequences (q = new tokens, k = KV length).
struct PhaseTokens {
  int64_t requests = 0;
  int64_t sum_q = 0;
  int64_t sum_k = 0;
  int64_t sum_qq = 0;
  int64_t sum_qk = 0;
  bool detailed = false;  // the (sq…sk…sqsq…sqsk…) group was present
};

struct StepAnnotation {
  std::string grammar;  // "vllm", "sglang", "atom", "step_name", "profiler_step"
  Stage stage = Stage::kUnknown;
  double batch_size = 0;  // requests in the step; 0 = not stated
  int64_t tokens = 0;     // scheduled tokens; 0 = not stated
  PhaseTokens context;    // vLLM only
  PhaseTokens generation;
};

// Recognised grammars:
//   vLLM   execute_N_context_R(sq…sk…sqsq…sqsk…)_generation_R(…),
//   execute_context_R(T)_generation_R(T) SGLang step[EXTEND|DECODE|MIXED bs=… toks=… …] ATOM
//   prefill[…], decode[…] (bs=… when present) names  decode_step_N, prefill_step_N, decode, prefill
//   (stage by name) ProfilerStep#N: an iteration of unknown stage.
// nullopt for anything else (model-level annotations, capture markers).
std::optional<StepAnnotation> parse_step_annotation(std::string_view name);

}  // namespace magpie::analysis
