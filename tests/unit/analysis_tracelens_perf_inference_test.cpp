// Engine-op perf models against hand-computed values (docs/PERF_MODELS_INFERENCE.md).
#include <gtest/gtest.h>

#include "analysis/perf_model_inference.hpp"

namespace magpie::analysis {
namespace {

const std::vector<std::string> kBf16x3{"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"};

TEST(PagedAttention, MixedStepFromAnnotationSums) {
  // 2 context sequences: (q=3,k=5), (q=2,k=2); 1 generation sequence (q=1,k=10).
  StepAnnotation s;
  s.context = {2, 5, 7, 9 + 4, 15 + 4, true};
  s.generation = {1, 1, 10, 1, 10, true};
  // Causal entries: seq1: 3·5 − 3·2/2 = 12; seq2: 2·2 − 1 = 3; decode: 10 → 25.
  auto c = paged_attention(s, 8, 2, 64, 64, 2, 2);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 8 * 128 * 25);
  // Q+O for 6 query tokens, K+V for 17 key tokens.
  EXPECT_DOUBLE_EQ(c->bytes, 6.0 * 8 * 128 * 2 + 17.0 * 2 * 128 * 2);
}

TEST(PagedAttention, NeedsDetailedAnnotation) {
  StepAnnotation s;
  s.context = {4, 2048, 0, 0, 0, false};
  EXPECT_FALSE(paged_attention(s, 8, 8, 64, 64, 2, 2));
  // The op needs the step: without it, no model rather than a guess.
  EXPECT_FALSE(model_for_inference_op(
      "vllm::unified_attention_with_output", {{32, 64, 64}, {32, 8, 64}, {32, 8, 64}, {32, 64, 64}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}, "", nullptr));
}

TEST(PagedAttention, UnifiedAttentionOpUsesStepAndHeads) {
  StepAnnotation s;
  s.generation = {32, 32, 55086, 32, 55086, true};
  auto c = model_for_inference_op(
      "vllm::unified_attention_with_output", {{32, 64, 64}, {32, 8, 64}, {32, 8, 64}, {32, 64, 64}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}, "", &s);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 64 * 128 * 55086);
  EXPECT_DOUBLE_EQ(c->bytes, 32.0 * 64 * 128 * 2 + 55086.0 * 8 * 128 * 2);
  EXPECT_TRUE(c->matrix);
  EXPECT_EQ(c->category, "SDPA");
}

TEST(FlashAttn, DenseForwardIsSdpaInBnhdLayout) {
  // q[2, 128, 16, 64], k/v[2, 128, 4, 64], causal: 2·B·Hq·N²·(d_qk + d_v)/2.
  auto c = model_for_inference_op("flash_attn::_flash_attn_forward",
                                  {{2, 128, 16, 64}, {2, 128, 4, 64}, {2, 128, 4, 64}, {}, {}},
                                  {"c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"},
                                  R"(["", "", "", "0.0", "0.125", "True"])", nullptr);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 16 * 128 * 128 * (64 + 64) * 2 / 2);
  EXPECT_DOUBLE_EQ(c->bytes, (2.0 * 128 * 16 * 64 * 2 + 2.0 * 128 * 4 * 64 * 2) * 2);
}

TEST(EngineGemm, RocmUnquantizedGemmIsLinear) {
  auto c = model_for_inference_op("vllm::rocm_unquantized_gemm",
                                  {{8192, 2880}, {5120, 2880}, {5120}}, kBf16x3, "", nullptr);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 8192 * 5120 * 2880 + 8192.0 * 5120);
  EXPECT_DOUBLE_EQ(c->bytes, (8192.0 * 2880 + 2880.0 * 5120 + 8192.0 * 5120 + 5120) * 2);
  EXPECT_EQ(c->category, "GEMM");
  auto no_bias =
      model_for_inference_op("vllm::rocm_unquantized_gemm", {{46, 2880}, {201088, 2880}, {}},
                             {"c10::BFloat16", "c10::BFloat16", ""}, "", nullptr);
  ASSERT_TRUE(no_bias);
  EXPECT_DOUBLE_EQ(no_bias->flops, 2.0 * 46 * 201088 * 2880);
}

TEST(EngineGemm, CutlassScaledMmFp8) {
  auto c = model_for_inference_op(
      "_C::cutlass_scaled_mm", {{16, 4096}, {16, 8192}, {8192, 4096}, {16, 1}, {1, 4096}, {}},
      {"c10::BFloat16", "c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", ""}, "",
      nullptr);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 16 * 4096 * 8192);
  EXPECT_DOUBLE_EQ(c->bytes, 16.0 * 8192 + 8192.0 * 4096 + 16.0 * 4096 * 2);
  EXPECT_EQ(c->compute_dtype, "c10::Float8_e4m3fn");
}

TEST(EngineNorm, RmsNormAndFusedAdd) {
  auto plain =
      model_for_inference_op("aiter::rms_norm", {{32, 2880}, {2880}, {}, {}},
                             {"c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"}, "", nullptr);
  ASSERT_TRUE(plain);
  const double n = 32.0 * 2880;
  EXPECT_DOUBLE_EQ(plain->flops, 32.0 * (2 * 2880 + 2) + n * 2);
  EXPECT_DOUBLE_EQ(plain->bytes, n * 2 + n * 2 + 2880.0 * 2);
  auto fused = model_for_inference_op(
      "vllm::rocm_aiter_rmsnorm2d_fwd_with_add", {{32, 2880}, {32, 2880}, {2880}, {}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar"}, "", nullptr);
  ASSERT_TRUE(fused);
  EXPECT_DOUBLE_EQ(fused->flops, plain->flops + n);
  EXPECT_DOUBLE_EQ(fused->bytes, plain->bytes + 2 * n * 2);
  EXPECT_EQ(fused->category, "norm");
}

TEST(EngineMoe, FusedExpertsGated) {
  // 4 tokens, hidden 8, inter 16, 2 experts, top-1, gated (w1 holds 2·I rows).
  auto c = model_for_inference_op(
      "vllm::outplace_fused_experts", {{4, 8}, {2, 32, 8}, {2, 8, 16}, {4, 1}, {4, 1}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "int"}, "", nullptr);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, moe_fused(4, 8, 16, 2, 1, true, 2, 2, 2).flops);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 4 * 1 * 8 * 16 * 2 + 2.0 * 4 * 1 * 16 * 8 + 4.0 * 8 * 1);
  EXPECT_EQ(c->category, "MoE");
}

TEST(EngineCache, ReshapeAndCacheMovesKvTwice) {
  auto c = model_for_inference_op(
      "_C_cache_ops::reshape_and_cache_flash",
      {{8192, 8, 64}, {8192, 8, 64}, {100, 32, 8, 64}, {100, 32, 8, 64}, {8192}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "long int"}, "",
      nullptr);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 0);
  EXPECT_DOUBLE_EQ(c->bytes, 2.0 * 2 * 8192 * 8 * 64 * 2);
}

TEST(EngineOps, AtenStillGoesToTheBaseModels) {
  auto mm =
      model_for_inference_op("aten::mm", {{16, 32}, {32, 8}}, {"float", "float"}, "", nullptr);
  ASSERT_TRUE(mm);
  EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 16 * 8 * 32);
  EXPECT_FALSE(model_for_inference_op("vllm::moe_forward", {{32, 3072}, {32, 32}},
                                      {"c10::BFloat16", "c10::BFloat16"}, "", nullptr));
}

}  // namespace
}  // namespace magpie::analysis
