// Step annotations of vLLM, SGLang, ATOM and plain step names → stage, batch, tokens.
#include <gtest/gtest.h>

#include "analysis/step_annotation.hpp"

namespace magpie::analysis {
namespace {

TEST(StepAnnotation, VllmDetailedPrefillDecode) {
  auto a = parse_step_annotation(
      "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37"
      "sqsk34489)");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->grammar, "vllm");
  EXPECT_EQ(a->stage, Stage::kPrefillDecode);
  EXPECT_EQ(a->batch_size, 46);
  EXPECT_EQ(a->tokens, 8192);
  EXPECT_TRUE(a->context.detailed);
  EXPECT_EQ(a->context.requests, 9);
  EXPECT_EQ(a->context.sum_q, 8155);
  EXPECT_EQ(a->context.sum_k, 8430);
  EXPECT_EQ(a->context.sum_qq, 7475785);
  EXPECT_EQ(a->context.sum_qk, 7671310);
  EXPECT_EQ(a->generation.requests, 37);
  EXPECT_EQ(a->generation.sum_k, 34489);
}

TEST(StepAnnotation, VllmDecodeOnlyAndShortForm) {
  auto d = parse_step_annotation(
      "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->stage, Stage::kDecode);
  EXPECT_EQ(d->batch_size, 32);
  auto p = parse_step_annotation("execute_context_4(2048)_generation_0(0)");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->stage, Stage::kPrefill);
  EXPECT_EQ(p->batch_size, 4);
  EXPECT_EQ(p->tokens, 2048);
  EXPECT_FALSE(p->context.detailed);
  EXPECT_FALSE(parse_step_annotation("execute_32_context_x"));
}

TEST(StepAnnotation, SglangAndAtom) {
  auto s = parse_step_annotation("step[DECODE bs=32]");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->grammar, "sglang");
  EXPECT_EQ(s->stage, Stage::kDecode);
  EXPECT_EQ(s->batch_size, 32);
  auto e = parse_step_annotation("step[EXTEND bs=4 toks=4096]");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->stage, Stage::kPrefill);
  EXPECT_EQ(e->tokens, 4096);
  EXPECT_EQ(parse_step_annotation("step[MIXED bs=8]")->stage, Stage::kPrefillDecode);
  EXPECT_FALSE(parse_step_annotation("step[IDLE]"));
  auto atom = parse_step_annotation("prefill[bs=2 tokens=512]");
  ASSERT_TRUE(atom);
  EXPECT_EQ(atom->grammar, "atom");
  EXPECT_EQ(atom->stage, Stage::kPrefill);
  EXPECT_EQ(atom->batch_size, 2);
  EXPECT_EQ(parse_step_annotation("decode[bs=64]")->stage, Stage::kDecode);
}

TEST(StepAnnotation, NamedStepsAndProfilerSteps) {
  auto d = parse_step_annotation("decode_step_15");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->grammar, "step_name");
  EXPECT_EQ(d->stage, Stage::kDecode);
  EXPECT_EQ(parse_step_annotation("prefill_step_0")->stage, Stage::kPrefill);
  EXPECT_EQ(parse_step_annotation("Decode")->stage, Stage::kDecode);
  auto ps = parse_step_annotation("ProfilerStep#6");
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->grammar, "profiler_step");
  EXPECT_EQ(ps->stage, Stage::kUnknown);
  for (const char* other : {"capture_32_FULL", "## Call CompiledFxGraph abc ##", "decoder_layer",
                            "prefill_cache", ""}) {
    EXPECT_FALSE(parse_step_annotation(other)) << other;
  }
}

TEST(StepAnnotation, StageNamesAndAliases) {
  EXPECT_EQ(parse_stage("pd"), Stage::kPrefillDecode);
  EXPECT_EQ(parse_stage("mixed"), Stage::kPrefillDecode);
  EXPECT_EQ(parse_stage("decode_only"), Stage::kDecode);
  EXPECT_EQ(parse_stage("PREFILL"), Stage::kPrefill);
  EXPECT_FALSE(parse_stage("train"));
  EXPECT_EQ(output_label(Stage::kDecode), "decode_only");
  EXPECT_EQ(output_label(Stage::kPrefill), "prefill_only");
  EXPECT_EQ(output_label(Stage::kPrefillDecode), "prefilldecode");
}

}  // namespace
}  // namespace magpie::analysis
