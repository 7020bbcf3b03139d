#pragma once
// Analytic FLOPs and bytes per op from recorded shapes and dtypes, and the
// roofline that turns them into "% of what the hardware could do".
// Formulas follow TraceLens where it has one; docs/PERF_MODELS.md gives each
// formula, its source and its limits. Everything here is pure: no trace.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/op_args.hpp"

namespace magpie::analysis {

// Bytes per element of a Kineto dtype string ("c10::BFloat16" = 2, "float" = 4,
// "c10::Float8_e4m3fn" = 1, "long int" = 8, ...). 0 = unknown or not a tensor
// ("Scalar", "ScalarList", ""): callers report "no perf model".
int bytes_per_element(std::string_view kineto_dtype);

struct OpCost {
  double flops = 0;
  double bytes = 0;         // DRAM traffic assumed: each operand read once, output written once
  std::string params_json;  // the model's parameters, compact JSON, for the report
  // Set by model_for_op (the formula helpers leave them empty): which units
  // and precision the roofline should use, and TraceLens-style op family.
  bool matrix = false;        // GEMM/attention/conv: matrix units; else vector units
  std::string compute_dtype;  // Kineto dtype string driving the peak lookup
  std::string category;       // "GEMM", "SDPA", "CONV", "elementwise", "reduce", "softmax", "norm"
};

// ---- shape parsing (Kineto "Input Dims" / "Input type" / "Concrete Inputs") --

// The ingest parses them once per distinct argument set (trace::OpDetail::args);
// the parsers are trace's, named here for the callers that parse text themselves.
using trace::parse_input_dims;
using trace::parse_input_types;

// ---- formula helpers: each returns flops, bytes and params_json -------------

// C[M,N] = A[M,K]·B[K,N] (+ bias broadcast over rows), `batch` times.
// bpe_bias > 0 means a bias is added: +M·N FLOPs, +N·bpe_bias bytes.
OpCost gemm(int64_t M, int64_t N, int64_t K, int bpe_a, int bpe_b, int bpe_out, int bpe_bias = 0,
            int64_t batch = 1);

// Attention over Q[B,Hq,Nq,d_qk], K[B,Hkv,Nkv,d_qk], V[B,Hkv,Nkv,d_v].
// Causal halves the FLOPs only when Nq == Nkv.
OpCost sdpa(int64_t B, int64_t Hq, int64_t Hkv, int64_t Nq, int64_t Nkv, int64_t d_qk, int64_t d_v,
            bool causal, int bpe);

// Variable-length / paged attention: one (q_len, kv_len) per sequence, summed.
struct SeqLens {
  int64_t q_len = 0;
  int64_t kv_len = 0;
};
OpCost attention_varlen(std::span<const SeqLens> seqs, int64_t Hq, int64_t Hkv, int64_t d_qk,
                        int64_t d_v, bool causal, int bpe_qo, int bpe_kv);

OpCost unary_elementwise(int64_t n, int bpe_in, int bpe_out);
// Inputs of n1 and n2 elements broadcast to n_out. A scalar argument has bpe 0.
OpCost binary_elementwise(int64_t n1, int64_t n2, int64_t n_out, int bpe1, int bpe2, int bpe_out);
OpCost reduction(int64_t n_in, int64_t n_out, int bpe_in, int bpe_out);
OpCost softmax(int64_t n, int bpe_in, int bpe_out);
// n elements normalised over the last c (= prod(normalized_shape)).
OpCost layer_norm(int64_t n, int64_t c, bool affine, bool bias, int bpe_in, int bpe_out);
OpCost rms_norm(int64_t n, int64_t c, bool affine, int bpe_in, int bpe_out);

// Convolution over x[N,C,...], w[K,C/groups,...] giving out[N,K,...].
OpCost convolution(std::span<const int64_t> x, std::span<const int64_t> w,
                   std::span<const int64_t> out, bool bias, int bpe, bool transposed = false);
// Output shape of a convolution; nullopt when the parameters don't fit x and w.
std::optional<std::vector<int64_t>> conv_output_shape(
    std::span<const int64_t> x, std::span<const int64_t> w, std::span<const int64_t> stride,
    std::span<const int64_t> padding, std::span<const int64_t> dilation, bool transposed = false,
    std::span<const int64_t> output_padding = {});

// Fused MoE experts (up+gate, activation, down, weighted combine).
OpCost moe_fused(int64_t tokens, int64_t hidden, int64_t inter, int64_t experts, int64_t topk,
                 bool gated, int bpe_in, int bpe_w, int bpe_out);

// ---- dispatch by aten op name ----------------------------------------------

// Model for one recorded op; nullopt when the op is unknown or its arguments
// don't fit the model (callers write has_perf_model=false).
std::optional<OpCost> model_for_op(std::string_view op_name,
                                   const std::vector<std::vector<int64_t>>& dims,
                                   const std::vector<std::string>& types,
                                   std::string_view concrete_inputs_json);
// The same with Concrete Inputs already parsed (trace::OpArgs::concrete).
std::optional<OpCost> model_for_op(std::string_view op_name,
                                   const std::vector<std::vector<int64_t>>& dims,
                                   const std::vector<std::string>& types,
                                   const std::vector<std::string>& concrete_inputs);

// ---- roofline ----------------------------------------------------------------

struct RooflinePoint {
  double arithmetic_intensity = 0;  // FLOPs per byte
  double achieved_tflops = 0;
  double achieved_tbps = 0;
  double compute_time_us = 0;   // FLOPs at peak
  double memory_time_us = 0;    // bytes at full bandwidth
  double roofline_time_us = 0;  // max of the two
  double pct_roofline = 0;      // roofline_time / measured · 100
  std::string bound;            // "compute" | "memory" | "" (nothing to bound by)
};

// A non-positive peak or bandwidth drops that side of the roofline.
RooflinePoint roofline(const OpCost& cost, double measured_us, double peak_tflops,
                       double mem_bw_tbps);

}  // namespace magpie::analysis
