// precision: each engine's flags for a precision, or why none are added.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "serve/engine_precision.hpp"

namespace magpie::serve {
namespace {

TEST(EnginePrecision, EachEngineGetsItsFlagsOrAReason) {
  EXPECT_EQ(precision_args(Framework::kVllm, "fp8", {}).args,
            (std::vector<std::string>{"--quantization", "fp8"}));
  EXPECT_EQ(precision_args(Framework::kVllm, "bf16", {}).args,
            (std::vector<std::string>{"--dtype", "bfloat16"}));
  EXPECT_EQ(precision_args(Framework::kSglang, "fp16", {}).args,
            (std::vector<std::string>{"--dtype", "float16"}));
  auto fp4 = precision_args(Framework::kVllm, "fp4", {});
  EXPECT_TRUE(fp4.args.empty());
  EXPECT_NE(fp4.warning.find("pre-quantized"), std::string::npos);
  auto atom = precision_args(Framework::kAtom, "bf16", {});
  EXPECT_TRUE(atom.args.empty());
  EXPECT_NE(atom.warning.find("not applied"), std::string::npos);
  // The user's own flag wins.
  auto given = precision_args(Framework::kVllm, "bf16", {"--max-num-seqs", "8", "--dtype=float32"});
  EXPECT_TRUE(given.args.empty());
  EXPECT_NE(given.warning.find("already set --dtype"), std::string::npos);
  EXPECT_THROW(precision_args(Framework::kVllm, "int3", {}), Error);
}

}  // namespace
}  // namespace magpie::serve
