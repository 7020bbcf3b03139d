// The typed reading of Kineto's shape args, on args copied from real traces
// (the H200 Llama trace and the H100 BERT trace of tests/data/public_traces).
#include <gtest/gtest.h>

#include "replay/op_arguments.hpp"

namespace magpie::replay {
namespace {

ParsedArgs parse(std::string_view dims, std::string_view types, std::string_view strides,
                 std::string_view concrete) {
  return parse_op_arguments({dims, types, strides, concrete});
}

TEST(ReplayOpArguments, MmWithTransposedWeight) {
  auto p = parse(R"([[16, 4096], [4096, 4096]])", R"(["c10::BFloat16", "c10::BFloat16"])",
                 R"([[4096, 1], [1, 4096]])", R"(["", ""])");
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.arguments.size(), 2u);
  EXPECT_EQ(p.arguments[0].kind, ArgumentKind::kTensor);
  EXPECT_EQ(p.arguments[1].tensor.shape, (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(p.arguments[1].tensor.strides, (std::vector<int64_t>{1, 4096}));
  EXPECT_EQ(p.arguments[1].tensor.torch_dtype, "bfloat16");
  EXPECT_TRUE(p.arguments[1].tensor.is_floating());
  EXPECT_EQ(describe_arguments(p.arguments),
            "bfloat16[16, 4096], bfloat16[4096, 4096] strides [1, 4096]");
}

TEST(ReplayOpArguments, CudnnAttentionScalarsAndNone) {
  auto p = parse(
      R"([[16, 32, 1024, 128], [16, 8, 1024, 128], [16, 8, 1024, 128], [], [], [], [], [], []])",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
      R"([[4194304, 128, 4096, 1], [1048576, 131072, 128, 1], [1048576, 131072, 128, 1], [], [], [], [], [], []])",
      R"(["", "", "", "", "False", "0.", "True", "False", "0.088388347648318447"])");
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.arguments.size(), 9u);
  EXPECT_EQ(p.arguments[3].kind, ArgumentKind::kNone);
  EXPECT_EQ(p.arguments[4].scalar.type, ScalarValue::Type::kBool);
  EXPECT_FALSE(p.arguments[4].scalar.b);
  EXPECT_EQ(p.arguments[5].scalar.type, ScalarValue::Type::kFloat);
  EXPECT_EQ(p.arguments[5].scalar.text, "0.");
  EXPECT_TRUE(p.arguments[6].scalar.b);
  EXPECT_NEAR(p.arguments[8].scalar.f, 0.0883883476, 1e-9);
  EXPECT_EQ(p.arguments[0].tensor.strides, (std::vector<int64_t>{4194304, 128, 4096, 1}));
}

TEST(ReplayOpArguments, CatTensorListKeepsEveryElement) {
  auto p = parse(R"([[[1, 1024, 64], [1, 1024, 64]], []])", R"(["TensorList", "Scalar"])",
                 R"([[[65536, 1, 1024], [65536, 1, 1024]], []])", R"(["", "-1"])");
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.arguments[0].kind, ArgumentKind::kTensorList);
  ASSERT_EQ(p.arguments[0].tensors.size(), 2u);
  EXPECT_EQ(p.arguments[0].tensors[1].strides, (std::vector<int64_t>{65536, 1, 1024}));
  EXPECT_EQ(p.arguments[0].tensors[1].torch_dtype, "");  // not recorded: prepare_target assumes one
  EXPECT_EQ(p.arguments[1].scalar.i, -1);
}

TEST(ReplayOpArguments, PythonNumberAndScalarList) {
  // aten::mul(float tensor, 0.5): the Python float is recorded as a dimensionless "double"
  auto mul = parse(R"([[1, 1024, 128], []])", R"(["float", "double"])", R"([[131072, 128, 1], []])",
                   R"(["", ""])");
  ASSERT_EQ(mul.error, "");
  EXPECT_EQ(mul.arguments[1].kind, ArgumentKind::kNumber);
  // aten::layer_norm from the BERT trace
  auto ln = parse(
      R"([[1, 141, 512], [], [512], [512], [], []])",
      R"(["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])",
      R"([[72192, 512, 1], [], [1], [1], [], []])",
      R"(["", "[512]", "", "", "9.9999999999999998e-13", "True"])");
  ASSERT_EQ(ln.error, "");
  ASSERT_EQ(ln.arguments[1].kind, ArgumentKind::kScalarList);
  ASSERT_EQ(ln.arguments[1].list.size(), 1u);
  EXPECT_EQ(ln.arguments[1].list[0].i, 512);
  EXPECT_NEAR(ln.arguments[4].scalar.f, 1e-12, 1e-20);
}

TEST(ReplayOpArguments, MalformedAndMissingArgsSayWhy) {
  EXPECT_NE(parse("[[16, 4096]", R"(["float"])", "", "").error, "");
  EXPECT_NE(parse(R"([[16], [4]])", R"(["float"])", "", "").error.find("Input Dims"),
            std::string::npos);
  EXPECT_NE(parse("", "", "", "").error.find("record_shapes"), std::string::npos);
  EXPECT_NE(parse(R"([[]])", R"(["Scalar"])", "", R"(["1.2.3"])").error.find("1.2.3"),
            std::string::npos);
}

TEST(ReplayOpArguments, DtypeNamesAndShapeFilters) {
  EXPECT_EQ(torch_dtype_name("c10::Half"), "float16");
  EXPECT_EQ(torch_dtype_name("long int"), "int64");
  EXPECT_EQ(torch_dtype_name("c10::Float8_e4m3fn"), "float8_e4m3fn");
  EXPECT_EQ(torch_dtype_name("c10::Mystery"), "");
  auto p = parse(R"([[16, 4096], [4096, 4096]])", R"(["c10::BFloat16", "c10::BFloat16"])", "", "");
  auto f = parse_shape_filter("[[16, 4096]]");
  ASSERT_TRUE(f);
  EXPECT_TRUE(shapes_match(p.arguments, *f));
  EXPECT_TRUE(shapes_match(p.arguments, *parse_shape_filter("[[16,4096],[4096,4096]]")));
  EXPECT_FALSE(shapes_match(p.arguments, *parse_shape_filter("[[4096, 4096]]")));
  EXPECT_FALSE(shapes_match(p.arguments, *parse_shape_filter("[[16,4096],[4096,4096],[1]]")));
  EXPECT_FALSE(parse_shape_filter("[[16, x]]"));
}

}  // namespace
}  // namespace magpie::replay
