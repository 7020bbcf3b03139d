#pragma once
// Perf models for inference engines' custom ops (vLLM, SGLang, aiter): paged /
// unified attention sized from the step annotation, varlen flash attention,
// fused-add RMSNorm, MoE fused experts, engine GEMM wrappers, fp8 scaled GEMMs
// and KV-cache writes. Formulas: docs/PERF_MODELS_INFERENCE.md.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/perf_model.hpp"
#include "analysis/step_annotation.hpp"

namespace magpie::analysis {

// Attention of one scheduler step from its vLLM annotation's token sums:
// score entries = Σq·k over generation sequences plus Σq·k − (Σq² − Σq)/2 over
// context sequences (causal), FLOPs = 2·Hq·(d_qk + d_v)·entries; bytes read
// Q and write O for Σq tokens and read K and V for Σk tokens. nullopt when the
// annotation has no (sq…sk…sqsq…sqsk…) detail.
std::optional<OpCost> paged_attention(const StepAnnotation& step, int64_t Hq, int64_t Hkv,
                                      int64_t d_qk, int64_t d_v, int bpe_qo, int bpe_kv);

// model_for_op first, then the engine ops above. `step` is the iteration's
// annotation (nullptr when unknown): attention ops without it get no model.
std::optional<OpCost> model_for_inference_op(std::string_view op_name,
                                             const std::vector<std::vector<int64_t>>& dims,
                                             const std::vector<std::string>& types,
                                             std::string_view concrete_inputs_json,
                                             const StepAnnotation* step);
// The same with Concrete Inputs already parsed (trace::OpArgs::concrete).
std::optional<OpCost> model_for_inference_op(std::string_view op_name,
                                             const std::vector<std::vector<int64_t>>& dims,
                                             const std::vector<std::string>& types,
                                             const std::vector<std::string>& concrete_inputs,
                                             const StepAnnotation* step);

}  // namespace magpie::analysis
