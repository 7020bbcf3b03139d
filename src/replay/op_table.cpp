#include "replay/op_table.hpp"

#include <array>

namespace magpie::replay {
namespace {

constexpr std::array kEmbeddingBounds{IndexBound{1, 0, -1, 0, false}};
constexpr std::array kDimIndexBounds{IndexBound{2, 0, 1, 0, false}};  // (self, dim, index, ...)
constexpr std::array kPerElementBounds{
    IndexBound{1, 0, -1, 0, true}};  // index(self, [i0, i1, ...])

constexpr std::string_view kNeedsCuda = "no CPU kernel: this attention backend is CUDA-only";

using F = OpFamily;
using S = CallStyle;
using D = InputDomain;

constexpr OpDescriptor op(std::string_view name, F family, S style = S::kAten,
                          D domain = D::kNormal) {
  return OpDescriptor{name, family, style, domain, true, {}, {}, false};
}
constexpr OpDescriptor first_only(OpDescriptor d) {
  d.first_output_only = true;
  return d;
}
constexpr OpDescriptor cuda_only(OpDescriptor d, std::string_view why) {
  d.runs_on_cpu = false;
  d.cpu_reason = why;
  return d;
}
template <size_t N>
constexpr OpDescriptor bounded(OpDescriptor d, const std::array<IndexBound, N>& b) {
  d.bounds = std::span<const IndexBound>(b);
  return d;
}

constexpr std::array kOps{
    // GEMM
    op("mm", F::kGemm),
    op("addmm", F::kGemm),
    op("bmm", F::kGemm),
    op("baddbmm", F::kGemm),
    op("linear", F::kGemm),
    op("matmul", F::kGemm),
    op("mv", F::kGemm),
    op("addmv", F::kGemm),
    cuda_only(op("_scaled_mm", F::kGemm, S::kAten, D::kPositive),
              "no CPU kernel for float8 scaled matmul"),
    // attention
    first_only(op("scaled_dot_product_attention", F::kAttention)),
    first_only(cuda_only(op("_scaled_dot_product_flash_attention", F::kAttention), kNeedsCuda)),
    first_only(cuda_only(op("_scaled_dot_product_efficient_attention", F::kAttention), kNeedsCuda)),
    first_only(cuda_only(op("_scaled_dot_product_cudnn_attention", F::kAttention), kNeedsCuda)),
    first_only(op("_scaled_dot_product_flash_attention_for_cpu", F::kAttention)),
    // normalisation
    op("layer_norm", F::kNorm),
    first_only(op("native_layer_norm", F::kNorm)),
    op("rms_norm", F::kNorm),
    first_only(op("_fused_rms_norm", F::kNorm)),
    op("group_norm", F::kNorm),
    first_only(op("native_group_norm", F::kNorm)),
    // softmax
    op("softmax", F::kSoftmax),
    op("_softmax", F::kSoftmax),
    op("log_softmax", F::kSoftmax),
    op("_log_softmax", F::kSoftmax),
    op("_safe_softmax", F::kSoftmax),
    // elementwise
    op("add", F::kElementwise),
    op("sub", F::kElementwise),
    op("rsub", F::kElementwise),
    op("mul", F::kElementwise),
    op("div", F::kElementwise, S::kAten, D::kPositive),
    op("neg", F::kElementwise),
    op("abs", F::kElementwise),
    op("exp", F::kElementwise),
    op("exp2", F::kElementwise),
    op("log", F::kElementwise, S::kAten, D::kPositive),
    op("log2", F::kElementwise, S::kAten, D::kPositive),
    op("log1p", F::kElementwise, S::kAten, D::kPositive),
    op("sqrt", F::kElementwise, S::kAten, D::kPositive),
    op("rsqrt", F::kElementwise, S::kAten, D::kPositive),
    op("reciprocal", F::kElementwise, S::kAten, D::kPositive),
    op("pow", F::kElementwise, S::kAten, D::kPositive),
    op("sin", F::kElementwise),
    op("cos", F::kElementwise),
    op("tanh", F::kElementwise),
    op("sigmoid", F::kElementwise),
    op("silu", F::kElementwise),
    op("gelu", F::kElementwise),
    op("relu", F::kElementwise),
    op("erf", F::kElementwise),
    op("clamp", F::kElementwise),
    op("clamp_min", F::kElementwise),
    op("clamp_max", F::kElementwise),
    op("where", F::kElementwise),
    op("maximum", F::kElementwise),
    op("minimum", F::kElementwise),
    op("masked_fill", F::kElementwise),
    op("lerp", F::kElementwise),
    op("addcmul", F::kElementwise),
    op("addcdiv", F::kElementwise, S::kAten, D::kPositive),
    op("eq", F::kElementwise),
    op("ne", F::kElementwise),
    op("lt", F::kElementwise),
    op("le", F::kElementwise),
    op("gt", F::kElementwise),
    op("ge", F::kElementwise),
    op("add_", F::kElementwise, S::kOutOfPlace),
    op("sub_", F::kElementwise, S::kOutOfPlace),
    op("mul_", F::kElementwise, S::kOutOfPlace),
    op("div_", F::kElementwise, S::kOutOfPlace, D::kPositive),
    op("neg_", F::kElementwise, S::kOutOfPlace),
    op("exp_", F::kElementwise, S::kOutOfPlace),
    op("sqrt_", F::kElementwise, S::kOutOfPlace, D::kPositive),
    op("rsqrt_", F::kElementwise, S::kOutOfPlace, D::kPositive),
    op("pow_", F::kElementwise, S::kOutOfPlace, D::kPositive),
    op("silu_", F::kElementwise, S::kOutOfPlace),
    op("gelu_", F::kElementwise, S::kOutOfPlace),
    op("relu_", F::kElementwise, S::kOutOfPlace),
    op("sigmoid_", F::kElementwise, S::kOutOfPlace),
    op("tanh_", F::kElementwise, S::kOutOfPlace),
    op("clamp_", F::kElementwise, S::kOutOfPlace),
    op("masked_fill_", F::kElementwise, S::kOutOfPlace),
    op("addcmul_", F::kElementwise, S::kOutOfPlace),
    // reductions
    op("sum", F::kReduction),
    op("mean", F::kReduction),
    op("amax", F::kReduction),
    op("amin", F::kReduction),
    op("max", F::kReduction),
    op("min", F::kReduction),
    op("argmax", F::kReduction),
    op("argmin", F::kReduction),
    op("prod", F::kReduction),
    op("cumsum", F::kReduction),
    op("linalg_vector_norm", F::kReduction),
    op("var", F::kReduction),
    op("std", F::kReduction),
    op("topk", F::kReduction),
    // embedding
    bounded(op("embedding", F::kEmbedding), kEmbeddingBounds),
    // cat, copy, index
    op("cat", F::kDataMovement),
    op("stack", F::kDataMovement),
    op("copy_", F::kDataMovement, S::kCopyInto),
    op("clone", F::kDataMovement),
    op("contiguous", F::kDataMovement),
    op("_to_copy", F::kDataMovement),
    op("to", F::kDataMovement, S::kToCopy),
    op("flip", F::kDataMovement),
    op("roll", F::kDataMovement),
    op("constant_pad_nd", F::kDataMovement),
    bounded(op("index_select", F::kDataMovement), kDimIndexBounds),
    bounded(op("gather", F::kDataMovement), kDimIndexBounds),
    bounded(op("scatter_add", F::kDataMovement), kDimIndexBounds),
    bounded(op("scatter_add_", F::kDataMovement, S::kOutOfPlace), kDimIndexBounds),
    bounded(op("index", F::kDataMovement), kPerElementBounds),
};

constexpr std::array<std::string_view, 29> kViews{"view",
                                                  "reshape",
                                                  "_unsafe_view",
                                                  "as_strided",
                                                  "transpose",
                                                  "t",
                                                  "permute",
                                                  "expand",
                                                  "expand_as",
                                                  "unsqueeze",
                                                  "squeeze",
                                                  "slice",
                                                  "select",
                                                  "alias",
                                                  "detach",
                                                  "detach_",
                                                  "lift_fresh",
                                                  "narrow",
                                                  "split",
                                                  "chunk",
                                                  "unbind",
                                                  "unflatten",
                                                  "flatten",
                                                  "view_as_real",
                                                  "view_as_complex",
                                                  "_reshape_alias",
                                                  "split_with_sizes",
                                                  "numpy_T",
                                                  "unfold"};
constexpr std::array<std::string_view, 8> kAllocations{
    "empty",     "empty_strided",     "empty_like", "resize_",
    "new_empty", "new_empty_strided", "set_",       "record_stream"};
constexpr std::array<std::string_view, 4> kHostSync{"item", "_local_scalar_dense", "is_nonzero",
                                                    "equal"};
constexpr std::array<std::string_view, 11> kRandom{
    "dropout", "native_dropout", "bernoulli", "bernoulli_",  "uniform_", "normal_",
    "randn",   "rand",           "randint",   "multinomial", "randperm"};
constexpr std::array<std::string_view, 4> kWriteOrder{"scatter", "scatter_", "index_put",
                                                      "index_put_"};
constexpr std::array<std::string_view, 10> kConstants{
    "fill_",  "zero_",      "zeros",     "ones",      "full",
    "arange", "zeros_like", "ones_like", "full_like", "scalar_tensor"};

template <size_t N>
bool in(const std::array<std::string_view, N>& set, std::string_view name) {
  for (auto s : set) {
    if (s == name) return true;
  }
  return false;
}

std::string_view strip_aten(std::string_view name) {
  constexpr std::string_view kAten = "aten::";
  return name.starts_with(kAten) ? name.substr(kAten.size()) : name;
}

}  // namespace

const char* to_string(OpFamily family) {
  switch (family) {
    case OpFamily::kGemm:
      return "GEMM";
    case OpFamily::kAttention:
      return "attention";
    case OpFamily::kNorm:
      return "norm";
    case OpFamily::kSoftmax:
      return "softmax";
    case OpFamily::kElementwise:
      return "elementwise";
    case OpFamily::kReduction:
      return "reduction";
    case OpFamily::kEmbedding:
      return "embedding";
    case OpFamily::kDataMovement:
      return "cat/copy/index";
  }
  return "other";
}

const OpDescriptor* find_op(std::string_view op_name) {
  if (op_name.find("::") != std::string_view::npos && !op_name.starts_with("aten::"))
    return nullptr;
  const auto name = strip_aten(op_name);
  for (const auto& d : kOps) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string not_replayable_reason(std::string_view op_name) {
  if (op_name.find("::") == std::string_view::npos || !op_name.starts_with("aten::")) {
    return "not an aten op (a custom, fused or Python-level op): replay rebuilds aten ops only; "
           "benchmark it "
           "with its own library";
  }
  const auto name = strip_aten(op_name);
  if (in(kViews, name)) return "a view: changes tensor metadata only and launches no GPU work";
  if (in(kAllocations, name)) return "allocates or re-binds memory only; no computation to replay";
  if (in(kHostSync, name))
    return "copies a value to the host (a synchronisation), not GPU computation";
  if (in(kRandom, name)) return "random output: no baseline output to check a candidate against";
  if (in(kWriteOrder, name)) {
    return "random indices can repeat, and then the result depends on the order of writes: a "
           "candidate "
           "cannot be checked against the baseline";
  }
  if (in(kConstants, name)) return "fills a tensor with a constant: no tensor input to replay";
  return "not in the replay table (docs/REPLAY.md lists the ops covered)";
}

std::span<const OpDescriptor> all_ops() { return kOps; }

}  // namespace magpie::replay
