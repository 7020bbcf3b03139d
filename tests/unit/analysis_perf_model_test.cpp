// Perf models: every formula against values worked out by hand in the test,
// dispatch from real Kineto argument strings, and the roofline.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "analysis/gpu_arch.hpp"
#include "analysis/perf_model.hpp"
#include "core/file_io.hpp"
#include "core/gzip.hpp"

namespace magpie::analysis {
namespace {

using Dims = std::vector<std::vector<int64_t>>;

// Runs model_for_op on argument strings exactly as Kineto writes them.
std::optional<OpCost> model(std::string_view op, std::string_view dims_json,
                            std::string_view types_json, std::string_view concrete_json = "[]") {
  auto dims = parse_input_dims(dims_json);
  EXPECT_TRUE(dims) << dims_json;
  if (!dims) return std::nullopt;
  return model_for_op(op, *dims, parse_input_types(types_json), concrete_json);
}

// ---- dtypes and parsing ----------------------------------------------------------

TEST(PerfModelDtype, BytesPerElement) {
  EXPECT_EQ(bytes_per_element("c10::BFloat16"), 2);
  EXPECT_EQ(bytes_per_element("c10::Half"), 2);
  EXPECT_EQ(bytes_per_element("float"), 4);
  EXPECT_EQ(bytes_per_element("double"), 8);
  EXPECT_EQ(bytes_per_element("c10::Float8_e4m3fn"), 1);
  EXPECT_EQ(bytes_per_element("c10::Float8_e4m3fnuz"), 1);
  EXPECT_EQ(bytes_per_element("c10::Float8_e5m2"), 1);
  EXPECT_EQ(bytes_per_element("long int"), 8);
  EXPECT_EQ(bytes_per_element("int"), 4);
  EXPECT_EQ(bytes_per_element("bool"), 1);
  EXPECT_EQ(bytes_per_element("c10::bfloat16"), 2);  // TraceLens lowercases; so do we
  EXPECT_EQ(bytes_per_element("Scalar"), 0);
  EXPECT_EQ(bytes_per_element("ScalarList"), 0);
  EXPECT_EQ(bytes_per_element("TensorList"), 0);
  EXPECT_EQ(bytes_per_element(""), 0);
}

TEST(PerfModelParse, RealInputDims) {
  // Strings copied from the shared H200 and MI300X traces.
  EXPECT_EQ(parse_input_dims("[[16, 1024, 4096], [4096, 4096], []]"),
            (Dims{{16, 1024, 4096}, {4096, 4096}, {}}));
  EXPECT_EQ(parse_input_dims("[[32000, 4096], [16, 1024], [], [], []]"),
            (Dims{{32000, 4096}, {16, 1024}, {}, {}, {}}));
  EXPECT_EQ(parse_input_dims("[[16, 32, 1024, 128], [16, 8, 1024, 128], [16, 8, 1024, 128], [], "
                             "[], [], [], [], [], [], [], [], []]"),
            (Dims{{16, 32, 1024, 128},
                  {16, 8, 1024, 128},
                  {16, 8, 1024, 128},
                  {},
                  {},
                  {},
                  {},
                  {},
                  {},
                  {},
                  {},
                  {},
                  {}}));
  EXPECT_EQ(parse_input_dims("[[0]]"), (Dims{{0}}));
  EXPECT_EQ(parse_input_dims("[]"), Dims{});
  EXPECT_EQ(parse_input_dims(" [ [1,2] ,[ 3 ] ] \n"), (Dims{{1, 2}, {3}}));
  // TensorList arguments (aten::cat, _foreach_copy_) keep their slot, empty.
  EXPECT_EQ(parse_input_dims("[[[1, 1024, 64], [1, 1024, 64]], []]"), (Dims{{}, {}}));
  EXPECT_EQ(parse_input_dims("[[[32], [32], [32], [32]], [[32], [32], [32], [32]], []]"),
            (Dims{{}, {}, {}}));
}

TEST(PerfModelParse, GarbageDimsAreRejected) {
  for (const char* bad : {"", "[", "[[1, 2]", "[1, 2]", "[[1, a]]", "[[1,2]] x", "[[1.5]]",
                          "[[99999999999999999999]]", "{\"a\": 1}", "[[1,]]", "[[1] [2]]"}) {
    EXPECT_FALSE(parse_input_dims(bad)) << bad;
  }
}

TEST(PerfModelParse, InputTypesAndConcreteInputs) {
  EXPECT_EQ(parse_input_types(R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])"),
            (std::vector<std::string>{"c10::BFloat16", "c10::BFloat16", "Scalar"}));
  EXPECT_EQ(parse_input_types(R"(["", "[-1]", "True", ""])"),
            (std::vector<std::string>{"", "[-1]", "True", ""}));
  EXPECT_EQ(parse_input_types(R"(["a\"b", "c\\d", "\u0041"])"),
            (std::vector<std::string>{"a\"b", "c\\d", "A"}));
  EXPECT_EQ(parse_input_types("[]"), std::vector<std::string>{});
  EXPECT_TRUE(parse_input_types(R"(["unterminated)").empty());
  EXPECT_TRUE(parse_input_types(R"(["a", 5])").empty());
  EXPECT_TRUE(parse_input_types("nope").empty());
}

// ---- GEMM --------------------------------------------------------------------

TEST(PerfModelGemm, MmBf16) {
  auto c = model("aten::mm", "[[16, 4096], [4096, 4096]]", R"(["c10::BFloat16", "c10::BFloat16"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 16 * 4096 * 4096);  // 536870912
  EXPECT_DOUBLE_EQ(c->flops, 536870912);
  EXPECT_DOUBLE_EQ(c->bytes, (16.0 * 4096 + 4096.0 * 4096 + 16.0 * 4096) * 2);  // 33816576
  EXPECT_TRUE(c->matrix);
  EXPECT_EQ(c->compute_dtype, "c10::BFloat16");
  EXPECT_EQ(c->category, "GEMM");
  EXPECT_NE(c->params_json.find("\"M\":16"), std::string::npos) << c->params_json;
}

TEST(PerfModelGemm, MmWithOutTensor) {
  // torch.compile trace: mm.out with the output buffer as a third tensor.
  auto c = model("aten::mm", "[[32768, 2048], [2048, 2048], [32768, 2048]]",
                 R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 274877906944);  // 2·32768·2048·2048
  EXPECT_DOUBLE_EQ(c->bytes, 276824064);     // (32768·2048·2 + 2048²) · 2
}

TEST(PerfModelGemm, AddmmAddsBiasFlopsAndBytes) {
  // BERT trace: addmm(bias[512], x[141,512], W[512,512]).
  auto c = model("aten::addmm", "[[512], [141, 512], [512, 512], [], []]",
                 R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])",
                 R"(["", "", "", "1", "1"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 141 * 512 * 512 + 141 * 512);  // 73996800
  EXPECT_DOUBLE_EQ(c->flops, 73996800);
  EXPECT_DOUBLE_EQ(c->bytes, (141 * 512 + 512 * 512 + 141 * 512 + 512) * 2.0);  // 814080
}

TEST(PerfModelGemm, LinearFoldsLeadingDims) {
  // H200 trace: linear(x[16,1024,4096], W[4096,4096]) → M = 16384.
  auto c = model("aten::linear", "[[16, 1024, 4096], [4096, 4096], []]",
                 R"(["c10::BFloat16", "c10::BFloat16", ""])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 549755813888);  // 2·16384·4096·4096
  EXPECT_DOUBLE_EQ(c->bytes, 301989888);     // (16384·4096·2 + 4096²)·2
  // With a bias it is addmm's cost.
  auto b = model("aten::linear", "[[1, 141, 512], [512, 512], [512]]",
                 R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])");
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->flops, 73996800);
  EXPECT_DOUBLE_EQ(b->bytes, 814080);
}

TEST(PerfModelGemm, BmmAndMatmulScaleByBatch) {
  // H200 trace (rotary embedding): bmm/matmul([1,64,1], [1,1,1024]) in fp32.
  for (const char* op : {"aten::bmm", "aten::matmul"}) {
    auto c = model(op, "[[1, 64, 1], [1, 1, 1024]]", R"(["float", "float"])");
    ASSERT_TRUE(c) << op;
    EXPECT_DOUBLE_EQ(c->flops, 131072) << op;                     // 2·64·1024·1
    EXPECT_DOUBLE_EQ(c->bytes, (64 + 1024 + 65536) * 4.0) << op;  // 266496
  }
  auto batched = model("aten::bmm", "[[8, 32, 16], [8, 16, 64]]", R"(["float", "float"])");
  ASSERT_TRUE(batched);
  EXPECT_DOUBLE_EQ(batched->flops, 8 * 2.0 * 32 * 64 * 16);                   // 524288
  EXPECT_DOUBLE_EQ(batched->bytes, 8 * (32 * 16 + 16 * 64 + 32 * 64) * 4.0);  // 114688
  // matmul with a 2-D right operand folds the batch into M.
  auto folded = model("aten::matmul", "[[4, 8, 16], [16, 32]]", R"(["float", "float"])");
  ASSERT_TRUE(folded);
  EXPECT_DOUBLE_EQ(folded->flops, 2.0 * 32 * 32 * 16);
  EXPECT_DOUBLE_EQ(folded->bytes, (32 * 16 + 16 * 32 + 32 * 32) * 4.0);
}

TEST(PerfModelGemm, BaddbmmAddsBiasPerBatch) {
  auto c = model("aten::baddbmm", "[[4, 32, 64], [4, 32, 16], [4, 16, 64], [], []]",
                 R"(["float", "float", "float", "Scalar", "Scalar"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 4 * (2.0 * 32 * 64 * 16 + 32 * 64));            // 270336
  EXPECT_DOUBLE_EQ(c->bytes, 4 * (32 * 16 + 16 * 64 + 32 * 64 + 64) * 4.0);  // 58368
}

TEST(PerfModelGemm, ScaledMmFp8) {
  const char* dims = "[[128, 256], [256, 512], [], [], [], [], [], []]";
  const char* types =
      R"(["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", "Scalar", "Scalar"])";
  // out_dtype 15 = bfloat16.
  auto bf16_out =
      model("aten::_scaled_mm", dims, types, R"(["", "", "", "", "", "", "15", "False"])");
  ASSERT_TRUE(bf16_out);
  EXPECT_DOUBLE_EQ(bf16_out->flops, 2.0 * 128 * 512 * 256);                    // 33554432
  EXPECT_DOUBLE_EQ(bf16_out->bytes, 128 * 256 + 256 * 512 + 128 * 512 * 2.0);  // 294912
  EXPECT_EQ(bf16_out->compute_dtype, "c10::Float8_e4m3fn");
  // out_dtype 6 = float.
  auto f32_out =
      model("aten::_scaled_mm", dims, types, R"(["", "", "", "", "", "", "6", "False"])");
  ASSERT_TRUE(f32_out);
  EXPECT_DOUBLE_EQ(f32_out->bytes, 128 * 256 + 256 * 512 + 128 * 512 * 4.0);  // 425984
  // No out_dtype recorded: TraceLens assumes a 16-bit output for fp8 inputs.
  auto unknown = model("aten::_scaled_mm", dims, types);
  ASSERT_TRUE(unknown);
  EXPECT_DOUBLE_EQ(unknown->bytes, 294912);
}

TEST(PerfModelGemm, FormulaHelper) {
  auto c = gemm(2, 3, 4, 2, 2, 4, /*bpe_bias=*/4, /*batch=*/5);
  EXPECT_DOUBLE_EQ(c.flops, 5 * (2.0 * 2 * 3 * 4 + 2 * 3));
  EXPECT_DOUBLE_EQ(c.bytes, 5 * (2 * 4 * 2 + 4 * 3 * 2 + 2 * 3 * 4 + 3 * 4.0));
}

TEST(PerfModelGemm, MismatchedShapesHaveNoModel) {
  EXPECT_FALSE(model("aten::mm", "[[16, 4096], [1024, 4096]]", R"(["float", "float"])"));
  EXPECT_FALSE(model("aten::mm", "[[16, 4096]]", R"(["float"])"));
  EXPECT_FALSE(model("aten::mm", "[[16, 4096], [4096, 8]]", R"(["Scalar", "float"])"));
  EXPECT_FALSE(model("aten::linear", "[[16, 100], [8, 64], []]", R"(["float", "float", ""])"));
}

// ---- attention ---------------------------------------------------------------

TEST(PerfModelAttention, CausalGqaSdpa) {
  // H200 trace: Llama GQA prefill, q[16,32,1024,128], k/v[16,8,1024,128], is_causal=True.
  auto c = model(
      "aten::scaled_dot_product_attention",
      "[[16, 32, 1024, 128], [16, 8, 1024, 128], [16, 8, 1024, 128], [], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar"])",
      R"(["", "", "", "", "0.", "True", "0.088388347648318447", "True"])");
  ASSERT_TRUE(c);
  // (B·Hq·2·Nq·Nkv·d_qk + B·Hq·2·Nq·Nkv·d_v) / 2 = 2 · 16·32·2·1024·1024·128 / 2
  EXPECT_DOUBLE_EQ(c->flops, 137438953472);
  // (B·Nq·Hq·d + B·Nkv·Hkv·d + B·Nkv·Hkv·d + B·Nq·Hq·d)·2 = 16·1024·128·80·2
  EXPECT_DOUBLE_EQ(c->bytes, 335544320);
  EXPECT_EQ(c->category, "SDPA");
  EXPECT_TRUE(c->matrix);
  // The cuDNN ops the H200 trace nests under it carry is_causal elsewhere.
  auto cudnn = model(
      "aten::_scaled_dot_product_cudnn_attention",
      "[[16, 32, 1024, 128], [16, 8, 1024, 128], [16, 8, 1024, 128], [], [], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
      R"(["", "", "", "", "False", "0.", "True", "False", "0.088388347648318447"])");
  ASSERT_TRUE(cudnn);
  EXPECT_DOUBLE_EQ(cudnn->flops, 137438953472);
  auto fwd = model(
      "aten::_cudnn_attention_forward",
      "[[16, 32, 1024, 128], [16, 8, 1024, 128], [16, 8, 1024, 128], [], [], [], [], [], [], [], "
      "[], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
      R"(["", "", "", "", "", "", "1024", "1024", "False", "0.", "True", "False", "0.088388347648318447"])");
  ASSERT_TRUE(fwd);
  EXPECT_DOUBLE_EQ(fwd->flops, 137438953472);
  EXPECT_DOUBLE_EQ(fwd->bytes, 335544320);
}

TEST(PerfModelAttention, FlashLayoutsAgree) {
  // BERT trace: the same attention seen as [B,H,N,d] (SDPA) and [B,N,H,d] (flash internals).
  auto sdpa_op = model(
      "aten::_scaled_dot_product_flash_attention",
      "[[1, 8, 141, 64], [1, 8, 141, 64], [1, 8, 141, 64], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"])",
      R"(["", "", "", "0.", "False", "False", "0.125"])");
  auto flash = model(
      "aten::_flash_attention_forward",
      "[[1, 141, 8, 64], [1, 141, 8, 64], [1, 141, 8, 64], [], [], [], [], [], [], [], [], [], [], "
      "[], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""])",
      R"(["", "", "", "", "", "141", "141", "0.", "False", "False", "0.125", "", "", "", ""])");
  ASSERT_TRUE(sdpa_op);
  ASSERT_TRUE(flash);
  // 2 · (1·8·2·141·141·64), not causal.
  EXPECT_DOUBLE_EQ(sdpa_op->flops, 40716288);
  EXPECT_DOUBLE_EQ(sdpa_op->bytes, 4 * 141 * 8 * 64 * 2.0);  // 577536
  EXPECT_DOUBLE_EQ(flash->flops, sdpa_op->flops);
  EXPECT_DOUBLE_EQ(flash->bytes, sdpa_op->bytes);
  // Flash varlen (3-D q) has no per-sequence lengths in the trace: no model.
  EXPECT_FALSE(model("aten::_flash_attention_forward", "[[141, 8, 64], [141, 8, 64], [141, 8, 64]]",
                     R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])"));
}

TEST(PerfModelAttention, CausalHalvesOnlySquareScores) {
  auto prefill = sdpa(1, 8, 8, 100, 100, 64, 64, true, 2);
  EXPECT_DOUBLE_EQ(prefill.flops, 8 * 2.0 * 100 * 100 * 128 / 2);  // 10240000
  auto decode = sdpa(1, 8, 8, 1, 100, 64, 64, true, 2);
  EXPECT_DOUBLE_EQ(decode.flops, 8 * 2.0 * 1 * 100 * 128);  // 204800, not halved
  EXPECT_DOUBLE_EQ(decode.bytes, (1 * 8 * 64 + 100 * 8 * 64 + 100 * 8 * 64 + 1 * 8 * 64) * 2.0);
}

TEST(PerfModelAttention, VarlenSumsSequences) {
  const std::vector<SeqLens> seqs{{100, 100}, {1, 50}};
  auto c = attention_varlen(seqs, /*Hq=*/8, /*Hkv=*/2, 64, 64, /*causal=*/true, 2, 2);
  // prefill: 8·2·100·100·128/2 = 10240000; decode: 8·2·1·50·128 = 102400
  EXPECT_DOUBLE_EQ(c.flops, 10342400);
  // prefill: 100·8·128·2 + 100·2·128·2 = 256000; decode: 1·8·128·2 + 50·2·128·2 = 27648
  EXPECT_DOUBLE_EQ(c.bytes, 283648);
  // Each sequence is one B=1 SDPA.
  EXPECT_DOUBLE_EQ(c.flops, sdpa(1, 8, 2, 100, 100, 64, 64, true, 2).flops +
                                sdpa(1, 8, 2, 1, 50, 64, 64, true, 2).flops);
  // An fp8 KV cache halves the K/V bytes only.
  auto fp8_kv = attention_varlen(seqs, 8, 2, 64, 64, true, 2, 1);
  EXPECT_DOUBLE_EQ(fp8_kv.bytes, 283648 - (100 + 50) * 2 * 128.0);
}

// ---- elementwise, reductions, softmax, norms ------------------------------------

TEST(PerfModelElementwise, Unary) {
  // H200 trace: silu on the MLP's [16,1024,14336] activations.
  auto c = model("aten::silu", "[[16, 1024, 14336]]", R"(["c10::BFloat16"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 234881024);
  EXPECT_DOUBLE_EQ(c->bytes, 234881024 * 4.0);
  EXPECT_FALSE(c->matrix);
  EXPECT_EQ(c->category, "elementwise");
  // gelu's second argument is the approximation string, not an out tensor.
  auto gelu = model("aten::gelu", "[[1, 141, 2048], []]", R"(["c10::BFloat16", ""])");
  ASSERT_TRUE(gelu);
  EXPECT_DOUBLE_EQ(gelu->bytes, 141 * 2048 * 4.0);
  EXPECT_TRUE(model("aten::silu_", "[[8, 8]]", R"(["float"])"));  // in-place
}

TEST(PerfModelElementwise, BinarySameShape) {
  // BERT trace: residual add.
  auto c = model("aten::add", "[[1, 141, 512], [1, 141, 512], []]",
                 R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])", R"(["", "", "1"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 72192);
  EXPECT_DOUBLE_EQ(c->bytes, 72192 * 2 * 3.0);  // 433152
}

TEST(PerfModelElementwise, BinaryBroadcastsToTheLargerShape) {
  auto c = model("aten::add", "[[16, 1, 4096], [1, 1024, 4096], []]",
                 R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 16.0 * 1024 * 4096);                                  // 67108864
  EXPECT_DOUBLE_EQ(c->bytes, (16 * 4096 + 1024 * 4096 + 16.0 * 1024 * 4096) * 2);  // 142737408
  EXPECT_FALSE(model("aten::mul", "[[3, 4], [5, 4]]", R"(["float", "float"])"));
}

TEST(PerfModelElementwise, ScalarOperands) {
  // H200 trace: mul by a 0-d double tensor — one element read, output stays float.
  auto zero_d = model("aten::mul", "[[1, 1024, 128], []]", R"(["float", "double"])");
  ASSERT_TRUE(zero_d);
  EXPECT_DOUBLE_EQ(zero_d->flops, 131072);
  EXPECT_DOUBLE_EQ(zero_d->bytes, 131072 * 4 + 8 + 131072 * 4.0);  // 1048584
  // A Python scalar is a kernel argument: no memory traffic for it.
  auto scalar =
      model("aten::pow", "[[16, 1024, 4096], []]", R"(["float", "Scalar"])", R"(["", "2"])");
  ASSERT_TRUE(scalar);
  EXPECT_DOUBLE_EQ(scalar->bytes, 16.0 * 1024 * 4096 * 8);  // 536870912
  // Mixed tensors promote to the wider type.
  auto mixed = model("aten::mul", "[[4, 4], [4, 4]]", R"(["c10::BFloat16", "float"])");
  ASSERT_TRUE(mixed);
  EXPECT_DOUBLE_EQ(mixed->bytes, 16 * 2 + 16 * 4 + 16 * 4.0);
}

TEST(PerfModelReduce, OverDimsAndFull) {
  // H200 trace: RMSNorm's mean over the last dim.
  auto mean = model("aten::mean", "[[16, 1024, 4096], [], [], []]",
                    R"(["float", "ScalarList", "Scalar", ""])", R"(["", "[-1]", "True", ""])");
  ASSERT_TRUE(mean);
  EXPECT_DOUBLE_EQ(mean->flops, 67108864);
  EXPECT_DOUBLE_EQ(mean->bytes, 67108864 * 4.0 + 16384 * 4.0);  // 268500992
  EXPECT_EQ(mean->category, "reduce");
  auto full = model("aten::sum", "[[10, 20], []]", R"(["float", ""])", R"(["", ""])");
  ASSERT_TRUE(full);
  EXPECT_DOUBLE_EQ(full->bytes, 200 * 4 + 4.0);
  auto two_axes =
      model("aten::amax", "[[2, 3, 4], [], []]", R"(["c10::BFloat16", "ScalarList", "Scalar"])",
            R"(["", "[0, 2]", "False"])");
  ASSERT_TRUE(two_axes);
  EXPECT_DOUBLE_EQ(two_axes->bytes, 24 * 2 + 3 * 2.0);
  EXPECT_FALSE(model("aten::sum", "[[2, 3], [], []]", R"(["float", "ScalarList", "Scalar"])",
                     R"(["", "[5]", "False"])"));
}

TEST(PerfModelSoftmax, ThreeFlopsPerElement) {
  auto c = model("aten::_softmax", "[[8, 128, 128], [], []]",
                 R"(["c10::BFloat16", "Scalar", "Scalar"])", R"(["", "-1", "False"])");
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops, 3.0 * 131072);  // 393216
  EXPECT_DOUBLE_EQ(c->bytes, 131072 * 4.0);  // read + write at 2 bytes
  auto up = model("aten::_softmax", "[[8, 128, 128], [], []]",
                  R"(["c10::BFloat16", "Scalar", "Scalar"])", R"(["", "-1", "True"])");
  ASSERT_TRUE(up);
  EXPECT_DOUBLE_EQ(up->bytes, 131072 * 6.0);  // half_to_float writes fp32
  auto dtype = model("aten::softmax", "[[4, 4], [], []]", R"(["c10::Half", "Scalar", ""])",
                     R"(["", "-1", "6"])");
  ASSERT_TRUE(dtype);
  EXPECT_DOUBLE_EQ(dtype->bytes, 16 * 6.0);
}

TEST(PerfModelNorm, LayerNormAffine) {
  // BERT trace: layer_norm over 512 with weight and bias.
  auto c = model(
      "aten::layer_norm", "[[1, 141, 512], [], [512], [512], [], []]",
      R"(["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])",
      R"(["", "[512]", "", "", "9.9999999999999998e-13", "True"])");
  ASSERT_TRUE(c);
  // 5·N + 6·C = 5·72192 + 6·512
  EXPECT_DOUBLE_EQ(c->flops, 364032);
  // N·(2+2) + (mean, var, weight, bias, 2 stats writes)·C·2 = 288768 + 6144
  EXPECT_DOUBLE_EQ(c->bytes, 294912);
  EXPECT_EQ(c->category, "norm");
  auto native =
      model("aten::native_layer_norm", "[[1, 141, 512], [], [512], [512], []]",
            R"(["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"])",
            R"(["", "[512]", "", "", "9.9999999999999998e-13"])");
  ASSERT_TRUE(native);
  EXPECT_DOUBLE_EQ(native->flops, c->flops);
  auto plain = layer_norm(1000, 100, false, false, 4, 4);
  EXPECT_DOUBLE_EQ(plain.bytes, 1000 * 8 + 4 * 100 * 4.0);
}

TEST(PerfModelNorm, RmsNormAffineAndNot) {
  const char* dims = "[[16, 1024, 4096], [], [4096], []]";
  const char* types = R"(["c10::BFloat16", "ScalarList", "c10::BFloat16", "Scalar"])";
  auto c = model("aten::rms_norm", dims, types, R"(["", "[4096]", "", "1e-05"])");
  ASSERT_TRUE(c);
  // (N/C)·(2C+2) + 2N = 16384·8194 + 2·67108864
  EXPECT_DOUBLE_EQ(c->flops, 268468224);
  EXPECT_DOUBLE_EQ(c->bytes, 67108864 * 4.0 + 4096 * 2);  // 268443648
  auto fused = model("aten::_fused_rms_norm", dims, types, R"(["", "[4096]", "", "1e-05"])");
  ASSERT_TRUE(fused);
  EXPECT_DOUBLE_EQ(fused->flops, c->flops);
  auto plain =
      model("aten::rms_norm", "[[16, 1024, 4096], [], [], []]",
            R"(["c10::BFloat16", "ScalarList", "", "Scalar"])", R"(["", "[4096]", "", "1e-05"])");
  ASSERT_TRUE(plain);
  EXPECT_DOUBLE_EQ(plain->flops, 16384.0 * 8194 + 67108864);  // 201359360
  EXPECT_DOUBLE_EQ(plain->bytes, 67108864 * 4.0);
}

// ---- convolution ----------------------------------------------------------------

TEST(PerfModelConv, Conv2dIsTwoNKCRSPQ) {
  auto c = model(
      "aten::conv2d", "[[8, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"])",
      R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"])");
  ASSERT_TRUE(c);
  // 2·N·K·C·R·S·P·Q = 2·8·128·64·3·3·56·56
  EXPECT_DOUBLE_EQ(c->flops, 3699376128);
  // (x + w + out)·2 = (1605632 + 73728 + 3211264)·2
  EXPECT_DOUBLE_EQ(c->bytes, 9781248);
  EXPECT_EQ(c->category, "CONV");
  EXPECT_TRUE(c->matrix);
}

TEST(PerfModelConv, StridedWithBias) {
  auto c = model(
      "aten::convolution", "[[8, 64, 56, 56], [128, 64, 3, 3], [128], [], [], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"])",
      R"(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])");
  ASSERT_TRUE(c);
  // out = [8,128,28,28] = 802816; 2·802816·(64·9) + 802816
  EXPECT_DOUBLE_EQ(c->flops, 925646848);
  EXPECT_DOUBLE_EQ(c->bytes, (1605632 + 73728 + 128 + 802816) * 2.0);  // 4964608
}

TEST(PerfModelConv, GroupsAndTransposedShapes) {
  // Depthwise: weight [C, 1, 3, 3] already carries C/groups.
  auto dw = model("aten::conv2d", "[[1, 32, 10, 10], [32, 1, 3, 3], [], [], [], [], []]",
                  R"(["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"])",
                  R"(["", "", "", "[1]", "[0]", "[1]", "32"])");
  ASSERT_TRUE(dw);
  EXPECT_DOUBLE_EQ(dw->flops, 2.0 * 32 * 8 * 8 * 9);  // 36864
  const std::vector<int64_t> x{1, 16, 8, 8}, w{16, 8, 4, 4}, two{2, 2}, one{1, 1}, zero{0, 0};
  auto out = conv_output_shape(x, w, two, one, one, /*transposed=*/true, zero);
  EXPECT_EQ(out, (std::vector<int64_t>{1, 8, 16, 16}));
  auto t = convolution(x, w, *out, false, 4, true);
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * (16 * 8 * 8) * (8 * 4 * 4));  // driven by the input
  EXPECT_FALSE(conv_output_shape(std::vector<int64_t>{1, 3, 2, 2}, std::vector<int64_t>{8, 3, 5, 5},
                                 one, zero, one));
}

// ---- MoE ---------------------------------------------------------------------------

TEST(PerfModelMoe, FusedExperts) {
  auto c = moe_fused(/*tokens=*/4, /*hidden=*/8, /*inter=*/16, /*experts=*/4, /*topk=*/2,
                     /*gated=*/true, 2, 2, 2);
  // tokens·topk·2·(H·I·2 + I·H) = 4·2·2·(256 + 128) = 6144, + combine 4·8·(2·2-1) = 96
  EXPECT_DOUBLE_EQ(c.flops, 6240);
  // active experts 4·(1 - (2/4)^4) = 3.75; weights 3.75·8·16·3·2 = 2880; in/out 64 each
  EXPECT_DOUBLE_EQ(c.bytes, 3008);
  auto ungated = moe_fused(4, 8, 16, 4, 2, false, 2, 2, 2);
  EXPECT_DOUBLE_EQ(ungated.flops, 4 * 2 * 2 * (8 * 16 + 16 * 8) + 96.0);
}

// ---- dispatch edge cases ---------------------------------------------------------

TEST(PerfModelDispatch, UnknownAndMalformedOps) {
  EXPECT_FALSE(model("aten::view", "[[16, 1024], []]", R"(["long int", "ScalarList"])"));
  EXPECT_FALSE(
      model("vllm::unified_attention_with_output", "[[8192, 64, 64]]", R"(["c10::BFloat16"])"));
  EXPECT_FALSE(model("mm", "[[2, 2], [2, 2]]", R"(["float", "float"])"));  // no aten:: prefix
  EXPECT_FALSE(model("aten::silu", "[[16, 1024]]", R"(["Scalar"])"));      // unknown dtype
  EXPECT_FALSE(model("aten::silu", "[[16, -1]]", R"(["float"])"));
  EXPECT_FALSE(model_for_op("aten::mm", {}, {}, ""));
  EXPECT_FALSE(model_for_op("aten::scaled_dot_product_attention", {{1, 2, 3}}, {"float"}, "[]"));
}

// ---- roofline ---------------------------------------------------------------------

TEST(Roofline, SmallGemmIsMemoryBoundOnH200) {
  const auto h200 = *find_gpu_arch("H200", builtin_gpu_archs());
  auto cost = gemm(16, 4096, 4096, 2, 2, 2);
  auto p = roofline(cost, 10.0, *peak_tflops(h200, "c10::BFloat16", true), h200.mem_bw_tbps);
  EXPECT_NEAR(p.arithmetic_intensity, 536870912.0 / 33816576.0, 1e-12);  // ≈ 15.9 < ridge 206
  EXPECT_NEAR(p.compute_time_us, 536870912.0 / 989e6, 1e-9);
  EXPECT_NEAR(p.memory_time_us, 33816576.0 / 4.8e6, 1e-9);  // ≈ 7.05 µs
  EXPECT_DOUBLE_EQ(p.roofline_time_us, p.memory_time_us);
  EXPECT_EQ(p.bound, "memory");
  EXPECT_NEAR(p.pct_roofline, p.memory_time_us / 10.0 * 100, 1e-9);
  EXPECT_NEAR(p.achieved_tflops, 53.6870912, 1e-9);
  EXPECT_NEAR(p.achieved_tbps, 3.3816576, 1e-9);
}

TEST(Roofline, LargeGemmIsComputeBound) {
  auto cost = gemm(8192, 8192, 8192, 2, 2, 2);
  auto p = roofline(cost, 1391.8, 989, 4.8);
  EXPECT_EQ(p.bound, "compute");
  EXPECT_NEAR(p.roofline_time_us, 1099511627776.0 / 989e6, 1e-6);             // ≈ 1111.7 µs
  EXPECT_NEAR(p.pct_roofline, 1099511627776.0 / 989e6 / 1391.8 * 100, 1e-9);  // ≈ 79.9 %
  EXPECT_NEAR(p.achieved_tflops, 1099511627776.0 / 1391.8e6, 1e-9);  // ≈ 790, as measured
}

TEST(Roofline, BoundAgreesWithRidgePoint) {
  const double peak = 989, bw = 4.8;
  const double ridge = peak / bw;  // FLOPs per byte where the two roofs meet
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> log_ai(-2, 5);
  for (int i = 0; i < 1000; ++i) {
    const double ai = std::pow(10.0, log_ai(rng));
    OpCost cost;
    cost.bytes = 1e9;
    cost.flops = ai * cost.bytes;
    auto p = roofline(cost, 1000, peak, bw);
    if (std::fabs(ai - ridge) / ridge < 1e-9) continue;
    EXPECT_EQ(p.bound, ai < ridge ? "memory" : "compute") << "AI " << ai;
    EXPECT_NEAR(p.arithmetic_intensity, ai, ai * 1e-12);
  }
}

TEST(Roofline, MissingSidesAndZeroTime) {
  OpCost cost;
  cost.flops = 1e12;
  cost.bytes = 1e9;
  auto no_peak = roofline(cost, 100, 0, 4.8);
  EXPECT_EQ(no_peak.bound, "memory");
  EXPECT_DOUBLE_EQ(no_peak.compute_time_us, 0);
  auto none = roofline(cost, 100, 0, 0);
  EXPECT_EQ(none.bound, "");
  auto zero_time = roofline(cost, 0, 989, 4.8);
  EXPECT_DOUBLE_EQ(zero_time.pct_roofline, 0);
  EXPECT_DOUBLE_EQ(zero_time.achieved_tflops, 0);
}

// ---- every recorded op of real traces parses, and the common ones are modelled ----

// The JSON value after `"key": ` starting at `from` (balanced brackets, string-aware).
std::string_view value_after(std::string_view text, std::string_view key, size_t from, size_t to) {
  const std::string needle = "\"" + std::string(key) + "\": ";
  const size_t k = text.find(needle, from);
  if (k == std::string_view::npos || k >= to) return {};
  size_t i = k + needle.size();
  const size_t start = i;
  int depth = 0;
  bool in_string = false;
  for (; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[') {
      ++depth;
    } else if (ch == ']' && --depth == 0) {
      return text.substr(start, i + 1 - start);
    }
  }
  return {};
}

class PerfModelRealTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(PerfModelRealTrace, EveryCpuOpParsesAndKeyOpsAreModelled) {
  const std::filesystem::path path = std::filesystem::path(MAGPIE_SHARED_TRACES) / GetParam();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " not present";
  }
  const auto raw = read_file(path);
  const auto buf = gunzip(raw.view(), path.string());
  const std::string_view text = buf.view();

  std::map<std::string, int> modelled, seen;
  size_t events = 0;
  const std::string_view marker = "\"cat\": \"cpu_op\"";
  const std::string_view name_key = "\"name\": \"";
  for (size_t at = text.find(marker); at != std::string_view::npos;
       at = text.find(marker, at + 1)) {
    const size_t name_at = text.find(name_key, at);
    ASSERT_NE(name_at, std::string_view::npos);
    const size_t name_start = name_at + name_key.size();
    const std::string name(text.substr(name_start, text.find('"', name_start) - name_start));
    const size_t end = text.find("\"Ev Idx\"", name_start);
    ASSERT_NE(end, std::string_view::npos);
    const auto dims_text = value_after(text, "Input Dims", name_start, end);
    if (dims_text.empty()) continue;
    ++events;
    auto dims = parse_input_dims(dims_text);
    ASSERT_TRUE(dims) << name << ": " << dims_text;
    const auto types = parse_input_types(value_after(text, "Input type", name_start, end));
    EXPECT_EQ(types.size(), dims->size()) << name;
    const auto concrete = value_after(text, "Concrete Inputs", name_start, end);
    ++seen[name];
    if (auto cost = model_for_op(name, *dims, types, concrete)) {
      ++modelled[name];
      EXPECT_GE(cost->flops, 0) << name;
      EXPECT_GT(cost->bytes, 0) << name << " " << dims_text;
    }
  }
  EXPECT_GT(events, 20u);
  for (const auto& [name, count] : seen) {
    const bool must = name == "aten::mm" || name == "aten::addmm" || name == "aten::linear" ||
                      name == "aten::scaled_dot_product_attention" || name == "aten::silu" ||
                      name == "aten::layer_norm" || name == "aten::mean" ||
                      name == "aten::_scaled_dot_product_flash_attention";
    if (must) {
      EXPECT_EQ(modelled[name], count) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PerfModelSharedTraces, PerfModelRealTrace,
                         ::testing::Values("h200/llama_4layer_bs16_prompt1024_decode16.json.gz",
                                           "public/traces__h100__gaunernst_bert-small-uncased__"
                                           "1016001.json.gz",
                                           "public/traces__torch_compile_triton__trace.json.gz"));

}  // namespace
}  // namespace magpie::analysis
