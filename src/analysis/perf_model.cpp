#include "analysis/perf_model.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "trace/op_args_cursor.hpp"

namespace magpie::analysis {
namespace {

using Shape = std::vector<int64_t>;
using Dims = std::vector<Shape>;
using nlohmann::json;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

double d(int64_t v) { return static_cast<double>(v); }

// ---- tokenizer for Kineto's small JSON arrays -------------------------------

using Cursor = trace::detail::ArgCursor;

// "[512]", "[-1]", "[1, 1]" or a bare "3" (one int) from a Concrete Inputs entry.
std::optional<Shape> parse_int_list(std::string_view text) {
  Cursor c(text);
  Shape out;
  if (c.eat('[')) {
    auto list = c.int_list_rest();
    if (!list) return std::nullopt;
    out = std::move(*list);
  } else {
    auto v = c.integer();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  c.skip_ws();
  if (!c.at_end()) return std::nullopt;
  return out;
}

std::optional<bool> parse_bool(std::string_view s) {
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  return std::nullopt;
}

// Kineto records a dtype argument (softmax's dtype, _scaled_mm's out_dtype)
// as c10::ScalarType's integer code.
std::string dtype_from_scalar_type(std::string_view code) {
  auto v = parse_int_list(code);
  if (!v || v->size() != 1) return {};
  switch ((*v)[0]) {
    case 1:
      return "signed char";
    case 3:
      return "int";
    case 4:
      return "long int";
    case 5:
      return "c10::Half";
    case 6:
      return "float";
    case 7:
      return "double";
    case 11:
      return "bool";
    case 15:
      return "c10::BFloat16";
    case 23:
      return "c10::Float8_e5m2";
    case 24:
      return "c10::Float8_e4m3fn";
    case 25:
      return "c10::Float8_e5m2fnuz";
    case 26:
      return "c10::Float8_e4m3fnuz";
    default:
      return {};
  }
}

// ---- shape helpers ---------------------------------------------------------------

std::optional<int64_t> numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) {
    if (v < 0) return std::nullopt;
    if (v != 0 && n > std::numeric_limits<int64_t>::max() / v) return std::nullopt;
    n *= v;
  }
  return n;
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  const size_t nd = std::max(a.size(), b.size());
  Shape out(nd, 1);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t x = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t y = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t product(std::span<const int64_t> s, size_t from = 0) {
  int64_t n = 1;
  for (size_t i = from; i < s.size(); ++i) n *= s[i];
  return n;
}

// ---- the op context: safe, indexed access to one recorded call --------------------

struct Call {
  std::string_view name;  // without "aten::"
  const Dims& dims;
  const std::vector<std::string>& types;
  std::vector<std::string> concrete;

  const Shape& dim(size_t i) const {
    static const Shape kEmpty;
    return i < dims.size() ? dims[i] : kEmpty;
  }
  std::string_view type(size_t i) const {
    return i < types.size() ? std::string_view(types[i]) : std::string_view();
  }
  std::string_view arg(size_t i) const {
    return i < concrete.size() ? std::string_view(concrete[i]) : std::string_view();
  }
  int bpe(size_t i) const { return bytes_per_element(type(i)); }
  bool has_tensor(size_t i) const { return !dim(i).empty() && bpe(i) > 0; }
  // The first tensor argument from index `from` on: an out= buffer.
  int out_bpe(size_t from, int fallback) const {
    for (size_t i = from; i < dims.size(); ++i) {
      if (has_tensor(i)) return bpe(i);
    }
    return fallback;
  }
};

OpCost tag(OpCost c, bool matrix, std::string_view dtype, std::string_view category) {
  c.matrix = matrix;
  c.compute_dtype = std::string(dtype);
  c.category = std::string(category);
  return c;
}

// ---- GEMM family ----------------------------------------------------------

std::optional<OpCost> model_mm(const Call& c, size_t a_idx, bool has_bias_arg, size_t out_from) {
  const Shape& a = c.dim(a_idx);
  const Shape& b = c.dim(a_idx + 1);
  if (a.size() != 2 || b.size() != 2 || a[1] != b[0]) return std::nullopt;
  const int bpe_a = c.bpe(a_idx);
  const int bpe_b = c.bpe(a_idx + 1);
  if (bpe_a == 0 || bpe_b == 0) return std::nullopt;
  const int bpe_bias = has_bias_arg && c.has_tensor(0) ? c.bpe(0) : 0;
  return tag(gemm(a[0], b[1], a[1], bpe_a, bpe_b, c.out_bpe(out_from, bpe_a), bpe_bias), true,
             c.type(a_idx), "GEMM");
}

std::optional<OpCost> model_bmm(const Call& c, size_t a_idx, bool has_bias_arg, size_t out_from) {
  const Shape& a = c.dim(a_idx);
  const Shape& b = c.dim(a_idx + 1);
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1]) return std::nullopt;
  const int bpe_a = c.bpe(a_idx);
  const int bpe_b = c.bpe(a_idx + 1);
  if (bpe_a == 0 || bpe_b == 0) return std::nullopt;
  const int bpe_bias = has_bias_arg && c.has_tensor(0) ? c.bpe(0) : 0;
  return tag(gemm(a[1], b[2], a[2], bpe_a, bpe_b, c.out_bpe(out_from, bpe_a), bpe_bias, a[0]), true,
             c.type(a_idx), "GEMM");
}

// torch.matmul's cases: vectors are promoted, a 2-D right operand folds the
// left's batch dims into M, otherwise batch dims broadcast.
std::optional<OpCost> model_matmul(const Call& c) {
  Shape a = c.dim(0);
  Shape b = c.dim(1);
  const int bpe_a = c.bpe(0);
  const int bpe_b = c.bpe(1);
  if (a.empty() || b.empty() || bpe_a == 0 || bpe_b == 0) return std::nullopt;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t K = a.back();
  if (b[b.size() - 2] != K) return std::nullopt;
  const int64_t N = b.back();
  int64_t M = a[a.size() - 2];
  int64_t batch = 1;
  if (b.size() == 2) {
    M = product(std::span<const int64_t>(a).first(a.size() - 1));
  } else {
    auto out_batch = broadcast(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
    if (!out_batch) return std::nullopt;
    batch = product(*out_batch);
  }
  return tag(gemm(M, N, K, bpe_a, bpe_b, c.out_bpe(2, bpe_a), 0, batch), true, c.type(0), "GEMM");
}

// linear(x[..., K], W[N, K], bias[N]?) = x·Wᵀ + bias.
std::optional<OpCost> model_linear(const Call& c) {
  const Shape& x = c.dim(0);
  const Shape& w = c.dim(1);
  if (x.empty() || w.size() != 2 || x.back() != w[1]) return std::nullopt;
  const int bpe_x = c.bpe(0);
  const int bpe_w = c.bpe(1);
  if (bpe_x == 0 || bpe_w == 0) return std::nullopt;
  const int64_t M = product(std::span<const int64_t>(x).first(x.size() - 1));
  const int bpe_bias = c.has_tensor(2) ? c.bpe(2) : 0;
  return tag(gemm(M, w[0], w[1], bpe_x, bpe_w, bpe_x, bpe_bias), true, c.type(0), "GEMM");
}

// _scaled_mm(a, b, scale_a, scale_b, bias?, scale_result?, out_dtype?, use_fast_accum).
std::optional<OpCost> model_scaled_mm(const Call& c) {
  const Shape& a = c.dim(0);
  const Shape& b = c.dim(1);
  if (a.size() != 2 || b.size() != 2 || a[1] != b[0]) return std::nullopt;
  const int bpe_a = c.bpe(0);
  const int bpe_b = c.bpe(1);
  if (bpe_a == 0 || bpe_b == 0) return std::nullopt;
  int bpe_out = bytes_per_element(dtype_from_scalar_type(c.arg(6)));
  // TraceLens's assumption when the trace doesn't say: fp8 in → 16-bit out.
  if (bpe_out == 0) bpe_out = bpe_a == 1 ? 2 : bpe_a;
  const int bpe_bias = c.has_tensor(4) ? c.bpe(4) : 0;
  return tag(gemm(a[0], b[1], a[1], bpe_a, bpe_b, bpe_out, bpe_bias), true, c.type(0), "GEMM");
}

// ---- attention ---------------------------------------------------------------

struct AttentionOp {
  std::string_view name;
  bool bnhd;         // q is [B, N, H, d] (flash/efficient internals) vs [B, H, N, d]
  size_t causal_at;  // index of is_causal in Concrete Inputs
  bool causal_is_mask_type = false;  // _efficient_attention_forward: int custom_mask_type
};

constexpr std::array<AttentionOp, 7> kAttentionOps{{
    {"scaled_dot_product_attention", false, 5},
    {"_scaled_dot_product_flash_attention", false, 4},
    {"_scaled_dot_product_efficient_attention", false, 6},
    {"_scaled_dot_product_cudnn_attention", false, 6},
    {"_cudnn_attention_forward", false, 10},
    {"_flash_attention_forward", true, 8},
    {"_efficient_attention_forward", true, 9, true},
}};

std::optional<OpCost> model_attention(const Call& c, const AttentionOp& op) {
  const Shape& q = c.dim(0);
  const Shape& k = c.dim(1);
  const Shape& v = c.dim(2);
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return std::nullopt;  // varlen: 3-D
  const size_t h = op.bnhd ? 2 : 1;
  const size_t n = op.bnhd ? 1 : 2;
  if (q[0] != k[0] || q[0] != v[0] || k[h] != v[h] || k[n] != v[n] || q[3] != k[3]) {
    return std::nullopt;
  }
  const int bpe = c.bpe(0);
  if (bpe == 0) return std::nullopt;
  bool causal = false;
  if (op.causal_is_mask_type) {
    auto mask = parse_int_list(c.arg(op.causal_at));
    causal = mask && mask->size() == 1 && (*mask)[0] != 0;
  } else {
    causal = parse_bool(c.arg(op.causal_at)).value_or(false);
  }
  return tag(sdpa(q[0], q[h], k[h], q[n], k[n], q[3], v[3], causal, bpe), true, c.type(0), "SDPA");
}

// ---- elementwise, reductions, softmax, norms --------------------------------------

constexpr std::array<std::string_view, 24> kUnaryOps{
    "silu",  "gelu",       "relu",   "exp",  "exp2",  "neg",   "sigmoid", "tanh",
    "rsqrt", "sqrt",       "cos",    "sin",  "log",   "log1p", "expm1",   "abs",
    "erf",   "reciprocal", "square", "sign", "floor", "ceil",  "round",   "hardswish"};
constexpr std::array<std::string_view, 8> kBinaryOps{"add",  "sub",     "mul",     "div",
                                                     "rsub", "maximum", "minimum", "pow"};
constexpr std::array<std::string_view, 4> kReduceOps{"sum", "mean", "amax", "amin"};

bool in(std::string_view name, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

std::optional<OpCost> model_unary(const Call& c) {
  auto n = numel(c.dim(0));
  const int bpe_in = c.bpe(0);
  if (!n || bpe_in == 0) return std::nullopt;
  return tag(unary_elementwise(*n, bpe_in, c.out_bpe(1, bpe_in)), false, c.type(0), "elementwise");
}

std::optional<OpCost> model_binary(const Call& c) {
  if (c.dims.size() < 2) return std::nullopt;
  const Shape& a = c.dim(0);
  const Shape& b = c.dim(1);
  const int bpe1 = c.bpe(0);
  const int bpe2 = c.bpe(1);  // 0 for a Python scalar: passed by value, no traffic
  if (bpe1 == 0) return std::nullopt;
  auto out = broadcast(a, b);
  if (!out) return std::nullopt;
  auto n1 = numel(a);
  auto n2 = numel(b);
  auto n_out = numel(*out);
  if (!n1 || !n2 || !n_out) return std::nullopt;
  // Without an out= tensor: two tensors promote to the wider type; a 0-d or
  // scalar operand does not (TraceLens's rule).
  const int fallback = (!a.empty() && !b.empty() && bpe2 > 0) ? std::max(bpe1, bpe2) : bpe1;
  return tag(binary_elementwise(*n1, *n2, *n_out, bpe1, bpe2, c.out_bpe(2, fallback)), false,
             c.type(0), "elementwise");
}

std::optional<OpCost> model_reduce(const Call& c) {
  const Shape& x = c.dim(0);
  auto n_in = numel(x);
  const int bpe_in = c.bpe(0);
  if (!n_in || bpe_in == 0) return std::nullopt;
  int64_t n_out = 1;
  auto axes = parse_int_list(c.arg(1));
  if (axes && !axes->empty()) {
    std::vector<bool> reduced(x.size(), false);
    for (int64_t ax : *axes) {
      const int64_t nd = static_cast<int64_t>(x.size());
      if (ax < 0) ax += nd;
      if (ax < 0 || ax >= nd) return std::nullopt;
      reduced[static_cast<size_t>(ax)] = true;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (!reduced[i]) n_out *= x[i];
    }
  }
  // sum/mean(self, dim, keepdim, dtype): an explicit dtype changes the output.
  int bpe_out = bytes_per_element(dtype_from_scalar_type(c.arg(3)));
  if (bpe_out == 0) bpe_out = bpe_in;
  return tag(reduction(*n_in, n_out, bpe_in, bpe_out), false, c.type(0), "reduce");
}

std::optional<OpCost> model_softmax(const Call& c) {
  auto n = numel(c.dim(0));
  const int bpe_in = c.bpe(0);
  if (!n || bpe_in == 0) return std::nullopt;
  int bpe_out = bpe_in;
  if (c.name.front() == '_') {  // _softmax(self, dim, half_to_float)
    if (parse_bool(c.arg(2)).value_or(false)) bpe_out = 4;
  } else if (int b = bytes_per_element(dtype_from_scalar_type(c.arg(2))); b > 0) {
    bpe_out = b;  // softmax(self, dim, dtype)
  }
  return tag(softmax(*n, bpe_in, bpe_out), false, c.type(0), "softmax");
}

// Normalised size: prod(normalized_shape) from Concrete Inputs, else the weight's size.
std::optional<int64_t> norm_channels(const Call& c) {
  if (auto shape = parse_int_list(c.arg(1)); shape && !shape->empty()) return numel(*shape);
  if (c.has_tensor(2)) return numel(c.dim(2));
  return std::nullopt;
}

std::optional<OpCost> model_layer_norm(const Call& c) {
  auto n = numel(c.dim(0));
  auto ch = norm_channels(c);
  const int bpe = c.bpe(0);
  if (!n || !ch || *ch <= 0 || bpe == 0) return std::nullopt;
  return tag(layer_norm(*n, *ch, c.has_tensor(2), c.has_tensor(3), bpe, bpe), false, c.type(0),
             "norm");
}

std::optional<OpCost> model_rms_norm(const Call& c) {
  auto n = numel(c.dim(0));
  auto ch = norm_channels(c);
  const int bpe = c.bpe(0);
  if (!n || !ch || *ch <= 0 || bpe == 0) return std::nullopt;
  return tag(rms_norm(*n, *ch, c.has_tensor(2), bpe, bpe), false, c.type(0), "norm");
}

// ---- convolution ---------------------------------------------------------------

// A stride/padding/dilation argument: "" → default, one value → every spatial dim.
std::optional<Shape> conv_param(std::string_view text, size_t spatial, int64_t dflt) {
  if (text.empty()) return Shape(spatial, dflt);
  auto v = parse_int_list(text);
  if (!v) return std::nullopt;
  if (v->size() == 1) return Shape(spatial, (*v)[0]);
  if (v->size() != spatial) return std::nullopt;
  return v;
}

// convolution(x, w, bias?, stride, padding, dilation, transposed, output_padding, groups);
// convNd(x, w, bias?, stride, padding, dilation, groups) when `full_signature` is false.
std::optional<OpCost> model_conv(const Call& c, bool full_signature) {
  const Shape& x = c.dim(0);
  const Shape& w = c.dim(1);
  if (x.size() < 3 || w.size() != x.size()) return std::nullopt;
  const size_t spatial = x.size() - 2;
  const int bpe = c.bpe(0);
  if (bpe == 0) return std::nullopt;
  const bool transposed = full_signature && parse_bool(c.arg(6)).value_or(false);
  const size_t groups_at = full_signature ? 8 : 6;
  const int64_t groups = [&] {
    auto g = parse_int_list(c.arg(groups_at));
    return g && g->size() == 1 && (*g)[0] > 0 ? (*g)[0] : int64_t{1};
  }();
  auto stride = conv_param(c.arg(3), spatial, 1);
  auto dilation = conv_param(c.arg(5), spatial, 1);
  auto out_pad = full_signature ? conv_param(c.arg(7), spatial, 0) : Shape(spatial, 0);
  if (!stride || !dilation || !out_pad) return std::nullopt;

  std::optional<Shape> out;
  if (c.arg(4) == "same") {  // conv2d(padding="same"): output keeps the input's size
    out = x;
    (*out)[1] = w[0];
  } else {
    auto padding = c.arg(4) == "valid" ? Shape(spatial, 0) : conv_param(c.arg(4), spatial, 0);
    if (!padding) return std::nullopt;
    out = conv_output_shape(x, w, *stride, *padding, *dilation, transposed, *out_pad);
    if (out && transposed) (*out)[1] = w[1] * groups;
  }
  if (!out) return std::nullopt;
  return tag(convolution(x, w, *out, c.has_tensor(2), bpe, transposed), true, c.type(0), "CONV");
}

std::string params(const json& j) { return j.dump(); }

}  // namespace

// ---- public: dtypes and parsing --------------------------------------------------

int bytes_per_element(std::string_view t) {
  if (iequals(t, "c10::BFloat16") || iequals(t, "c10::Half") || iequals(t, "short int")) return 2;
  if (iequals(t, "float") || iequals(t, "int") || iequals(t, "unsigned int")) return 4;
  if (iequals(t, "double") || iequals(t, "long int") || iequals(t, "long long int") ||
      iequals(t, "c10::complex<float>")) {
    return 8;
  }
  // Float4_e2m1fn_x2 packs two values in one byte; Kineto counts packed elements.
  if (istarts_with(t, "c10::Float8_") || istarts_with(t, "c10::Float4_") || iequals(t, "bool") ||
      iequals(t, "signed char") || iequals(t, "unsigned char")) {
    return 1;
  }
  if (iequals(t, "c10::complex<double>")) return 16;
  return 0;
}

// ---- public: formulas -------------------------------------------------------------

OpCost gemm(int64_t M, int64_t N, int64_t K, int bpe_a, int bpe_b, int bpe_out, int bpe_bias,
            int64_t batch) {
  const bool bias = bpe_bias > 0;
  OpCost c;
  c.flops = d(batch) * (2.0 * d(M) * d(N) * d(K) + (bias ? d(M) * d(N) : 0.0));
  c.bytes = d(batch) * (d(M) * d(K) * bpe_a + d(K) * d(N) * bpe_b + d(M) * d(N) * bpe_out +
                        (bias ? d(N) * bpe_bias : 0.0));
  c.params_json = params({{"B", batch},
                          {"M", M},
                          {"N", N},
                          {"K", K},
                          {"bias", bias},
                          {"bpe_a", bpe_a},
                          {"bpe_b", bpe_b},
                          {"bpe_out", bpe_out}});
  return c;
}

OpCost sdpa(int64_t B, int64_t Hq, int64_t Hkv, int64_t Nq, int64_t Nkv, int64_t d_qk, int64_t d_v,
            bool causal, int bpe) {
  OpCost c;
  const double qk = d(B) * d(Hq) * 2.0 * d(Nq) * d(Nkv) * d(d_qk);
  const double pv = d(B) * d(Hq) * 2.0 * d(Nq) * d(Nkv) * d(d_v);
  // A causal mask skips half the score matrix only when it is square.
  const bool halved = causal && Nq == Nkv;
  c.flops = (qk + pv) * (halved ? 0.5 : 1.0);
  c.bytes = (d(B) * d(Nq) * d(Hq) * d(d_qk) + d(B) * d(Nkv) * d(Hkv) * d(d_qk) +
             d(B) * d(Nkv) * d(Hkv) * d(d_v) + d(B) * d(Nq) * d(Hq) * d(d_v)) *
            bpe;
  c.params_json = params({{"B", B},
                          {"H_Q", Hq},
                          {"H_KV", Hkv},
                          {"N_Q", Nq},
                          {"N_KV", Nkv},
                          {"d_h_qk", d_qk},
                          {"d_h_v", d_v},
                          {"causal", causal},
                          {"bpe", bpe}});
  return c;
}

OpCost attention_varlen(std::span<const SeqLens> seqs, int64_t Hq, int64_t Hkv, int64_t d_qk,
                        int64_t d_v, bool causal, int bpe_qo, int bpe_kv) {
  OpCost c;
  int64_t total_q = 0;
  int64_t total_kv = 0;
  for (const auto& s : seqs) {
    const bool halved = causal && s.q_len == s.kv_len;
    c.flops += d(Hq) * 2.0 * d(s.q_len) * d(s.kv_len) * d(d_qk + d_v) * (halved ? 0.5 : 1.0);
    c.bytes +=
        d(s.q_len) * d(Hq) * d(d_qk + d_v) * bpe_qo + d(s.kv_len) * d(Hkv) * d(d_qk + d_v) * bpe_kv;
    total_q += s.q_len;
    total_kv += s.kv_len;
  }
  c.params_json = params({{"num_seqs", seqs.size()},
                          {"sum_q", total_q},
                          {"sum_kv", total_kv},
                          {"H_Q", Hq},
                          {"H_KV", Hkv},
                          {"d_h_qk", d_qk},
                          {"d_h_v", d_v},
                          {"causal", causal},
                          {"bpe_qo", bpe_qo},
                          {"bpe_kv", bpe_kv}});
  return c;
}

OpCost unary_elementwise(int64_t n, int bpe_in, int bpe_out) {
  return {d(n), d(n) * (bpe_in + bpe_out),
          params({{"n", n}, {"bpe_in", bpe_in}, {"bpe_out", bpe_out}})};
}

OpCost binary_elementwise(int64_t n1, int64_t n2, int64_t n_out, int bpe1, int bpe2, int bpe_out) {
  return {d(n_out), d(n1) * bpe1 + d(n2) * bpe2 + d(n_out) * bpe_out,
          params({{"n_in1", n1},
                  {"n_in2", n2},
                  {"n_out", n_out},
                  {"bpe_in1", bpe1},
                  {"bpe_in2", bpe2},
                  {"bpe_out", bpe_out}})};
}

OpCost reduction(int64_t n_in, int64_t n_out, int bpe_in, int bpe_out) {
  return {d(n_in), d(n_in) * bpe_in + d(n_out) * bpe_out,
          params({{"n_in", n_in}, {"n_out", n_out}, {"bpe_in", bpe_in}, {"bpe_out", bpe_out}})};
}

OpCost softmax(int64_t n, int bpe_in, int bpe_out) {
  // TraceLens: exp, sum and divide per element.
  return {3.0 * d(n), d(n) * (bpe_in + bpe_out),
          params({{"n", n}, {"bpe_in", bpe_in}, {"bpe_out", bpe_out}})};
}

OpCost layer_norm(int64_t n, int64_t c, bool affine, bool bias, int bpe_in, int bpe_out) {
  // TraceLens's Normalization model with is_training=True (its LayerNorm).
  const double flops = 3.0 * d(c) + 3.0 * d(n) + 3.0 * d(c) + 2.0 * d(n);
  const int param_tensors = 2 + (affine ? 1 : 0) + (affine && bias ? 1 : 0) + 2;
  const double bytes = d(n) * (bpe_in + bpe_out) + d(param_tensors) * d(c) * bpe_in;
  return {flops, bytes,
          params({{"n", n},
                  {"normalized_size", c},
                  {"affine", affine},
                  {"bias", bias},
                  {"bpe_in", bpe_in},
                  {"bpe_out", bpe_out}})};
}

OpCost rms_norm(int64_t n, int64_t c, bool affine, int bpe_in, int bpe_out) {
  const double rows = d(n) / d(c);
  const double flops = rows * (2.0 * d(c) + 2.0) + d(n) * (affine ? 2.0 : 1.0);
  const double bytes = d(n) * bpe_in + d(n) * bpe_out + (affine ? d(c) * bpe_in : 0.0);
  return {flops, bytes,
          params({{"n", n},
                  {"normalized_size", c},
                  {"affine", affine},
                  {"bpe_in", bpe_in},
                  {"bpe_out", bpe_out}})};
}

OpCost convolution(std::span<const int64_t> x, std::span<const int64_t> w,
                   std::span<const int64_t> out, bool bias, int bpe, bool transposed) {
  // Per output (or, transposed, per input) element: a C/groups·R·S… dot product.
  const double macs_per_elem = d(product(w, 1));
  const double driving = transposed ? d(product(x)) : d(product(out));
  const double n_out = d(product(out));
  const int64_t out_channels = out.size() > 1 ? out[1] : 0;
  OpCost c;
  c.flops = 2.0 * driving * macs_per_elem + (bias ? n_out : 0.0);
  c.bytes = (d(product(x)) + d(product(w)) + (bias ? d(out_channels) : 0.0) + n_out) * bpe;
  c.params_json = params({{"input_shape", std::vector<int64_t>(x.begin(), x.end())},
                          {"filter_shape", std::vector<int64_t>(w.begin(), w.end())},
                          {"output_shape", std::vector<int64_t>(out.begin(), out.end())},
                          {"bias", bias},
                          {"transposed", transposed},
                          {"bpe", bpe}});
  return c;
}

std::optional<std::vector<int64_t>> conv_output_shape(
    std::span<const int64_t> x, std::span<const int64_t> w, std::span<const int64_t> stride,
    std::span<const int64_t> padding, std::span<const int64_t> dilation, bool transposed,
    std::span<const int64_t> output_padding) {
  if (x.size() < 3 || w.size() != x.size()) return std::nullopt;
  const size_t spatial = x.size() - 2;
  if (stride.size() != spatial || padding.size() != spatial || dilation.size() != spatial) {
    return std::nullopt;
  }
  if (!output_padding.empty() && output_padding.size() != spatial) return std::nullopt;
  std::vector<int64_t> out{x[0], transposed ? w[1] : w[0]};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = x[i + 2];
    const int64_t k = w[i + 2];
    const int64_t s = stride[i];
    if (s <= 0 || dilation[i] <= 0) return std::nullopt;
    int64_t o = 0;
    if (transposed) {
      const int64_t op = output_padding.empty() ? 0 : output_padding[i];
      o = (in - 1) * s - 2 * padding[i] + dilation[i] * (k - 1) + op + 1;
    } else {
      const int64_t span = in + 2 * padding[i] - dilation[i] * (k - 1) - 1;
      if (span < 0) return std::nullopt;
      o = span / s + 1;
    }
    if (o <= 0) return std::nullopt;
    out.push_back(o);
  }
  return out;
}

OpCost moe_fused(int64_t tokens, int64_t hidden, int64_t inter, int64_t experts, int64_t topk,
                 bool gated, int bpe_in, int bpe_w, int bpe_out) {
  const double T = d(tokens), H = d(hidden), I = d(inter), E = d(experts), k = d(topk);
  const double up = 2.0 * T * k * H * I * (gated ? 2.0 : 1.0);
  const double down = 2.0 * T * k * I * H;
  const double combine = T * H * (2.0 * k - 1.0);  // weighted sum of the top-k outputs
  // Experts touched by T tokens each routed to k of E, uniformly at random.
  const double active = E > 0 ? E * (1.0 - std::pow((E - k) / E, T)) : 0.0;
  const double weights = active * H * I * ((gated ? 2.0 : 1.0) + 1.0) * bpe_w;
  OpCost c;
  c.flops = up + down + std::max(0.0, combine);
  c.bytes = T * H * bpe_in + weights + T * H * bpe_out;
  c.params_json = params({{"tokens", tokens},
                          {"hidden", hidden},
                          {"inter", inter},
                          {"experts", experts},
                          {"topk", topk},
                          {"gated", gated},
                          {"active_experts", active},
                          {"bpe_in", bpe_in},
                          {"bpe_w", bpe_w},
                          {"bpe_out", bpe_out}});
  return c;
}

// ---- public: dispatch --------------------------------------------------------------

std::optional<OpCost> model_for_op(std::string_view op_name, const Dims& dims,
                                   const std::vector<std::string>& types,
                                   std::string_view concrete_inputs_json) {
  return model_for_op(op_name, dims, types, parse_input_types(concrete_inputs_json));
}

std::optional<OpCost> model_for_op(std::string_view op_name, const Dims& dims,
                                   const std::vector<std::string>& types,
                                   const std::vector<std::string>& concrete_inputs) {
  constexpr std::string_view kAten = "aten::";
  if (op_name.substr(0, kAten.size()) != kAten) return std::nullopt;
  Call c{op_name.substr(kAten.size()), dims, types, concrete_inputs};
  const std::string_view n = c.name;
  if (n.empty()) return std::nullopt;

  if (n == "mm") return model_mm(c, 0, false, 2);
  if (n == "addmm") return model_mm(c, 1, true, 3);
  if (n == "bmm") return model_bmm(c, 0, false, 2);
  if (n == "baddbmm") return model_bmm(c, 1, true, 3);
  if (n == "matmul") return model_matmul(c);
  if (n == "linear") return model_linear(c);
  if (n == "_scaled_mm") return model_scaled_mm(c);
  for (const auto& op : kAttentionOps) {
    if (n == op.name) return model_attention(c, op);
  }
  if (n == "_softmax" || n == "softmax" || n == "_log_softmax" || n == "log_softmax") {
    return model_softmax(c);
  }
  if (n == "layer_norm" || n == "native_layer_norm") return model_layer_norm(c);
  if (n == "rms_norm" || n == "_fused_rms_norm") return model_rms_norm(c);
  if (n == "convolution" || n == "_convolution") return model_conv(c, true);
  if (n == "conv1d" || n == "conv2d" || n == "conv3d") return model_conv(c, false);
  if (in(n, kReduceOps)) return model_reduce(c);

  // In-place variants (add_, silu_) move the same bytes.
  const std::string_view base = n.size() > 1 && n.back() == '_' ? n.substr(0, n.size() - 1) : n;
  if (in(base, kBinaryOps)) return model_binary(c);
  if (in(base, kUnaryOps)) return model_unary(c);
  return std::nullopt;
}

// ---- public: roofline ------------------------------------------------------------

RooflinePoint roofline(const OpCost& cost, double measured_us, double peak_tflops,
                       double mem_bw_tbps) {
  RooflinePoint p;
  // TFLOP/s = 1e12 FLOP/s = 1e6 FLOP/µs; same for TB/s.
  p.compute_time_us = peak_tflops > 0 ? cost.flops / (peak_tflops * 1e6) : 0.0;
  p.memory_time_us = mem_bw_tbps > 0 ? cost.bytes / (mem_bw_tbps * 1e6) : 0.0;
  p.roofline_time_us = std::max(p.compute_time_us, p.memory_time_us);
  if (p.roofline_time_us > 0) p.bound = p.compute_time_us > p.memory_time_us ? "compute" : "memory";
  p.arithmetic_intensity = cost.bytes > 0 ? cost.flops / cost.bytes : 0.0;
  if (measured_us > 0) {
    p.achieved_tflops = cost.flops / (measured_us * 1e6);
    p.achieved_tbps = cost.bytes / (measured_us * 1e6);
    p.pct_roofline = p.roofline_time_us / measured_us * 100.0;
  }
  return p;
}

}  // namespace magpie::analysis
