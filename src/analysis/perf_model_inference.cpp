#include "analysis/perf_model_inference.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace magpie::analysis {

namespace {

using Shape = std::vector<int64_t>;
using Dims = std::vector<Shape>;

double d(int64_t v) { return static_cast<double>(v); }

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

struct Args {
  const Dims& dims;
  const std::vector<std::string>& types;
  const Shape& dim(size_t i) const {
    static const Shape kEmpty;
    return i < dims.size() ? dims[i] : kEmpty;
  }
  std::string_view type(size_t i) const {
    return i < types.size() ? std::string_view(types[i]) : std::string_view();
  }
  int bpe(size_t i) const { return bytes_per_element(type(i)); }
};

OpCost tagged(OpCost c, bool matrix, std::string_view dtype, std::string_view category) {
  c.matrix = matrix;
  c.compute_dtype = std::string(dtype);
  c.category = std::string(category);
  return c;
}

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Engine GEMM wrappers with linear's signature: x[..., K], W[N, K], bias[N]?.
std::optional<OpCost> linear_like(const Args& a) {
  const Shape& x = a.dim(0);
  const Shape& w = a.dim(1);
  if (x.empty() || w.size() != 2 || x.back() != w[1] || a.bpe(0) == 0 || a.bpe(1) == 0) {
    return std::nullopt;
  }
  const int64_t M = numel(x) / x.back();
  const int bias = a.dim(2).size() == 1 ? a.bpe(2) : 0;
  return tagged(gemm(M, w[0], w[1], a.bpe(0), a.bpe(1), a.bpe(0), bias), true, a.type(0), "GEMM");
}

// _C::cutlass_scaled_mm(out[M,N], a[M,K], b[K,N], a_scales, b_scales, bias?).
std::optional<OpCost> cutlass_scaled_mm(const Args& a) {
  const Shape& out = a.dim(0);
  const Shape& x = a.dim(1);
  const Shape& w = a.dim(2);
  if (out.size() != 2 || x.size() != 2 || w.size() != 2 || x[1] != w[0]) return std::nullopt;
  if (a.bpe(1) == 0 || a.bpe(2) == 0) return std::nullopt;
  const int bpe_out = a.bpe(0) > 0 ? a.bpe(0) : 2;
  const int bias = a.dim(5).size() == 1 ? a.bpe(5) : 0;
  return tagged(gemm(x[0], w[1], x[1], a.bpe(1), a.bpe(2), bpe_out, bias), true, a.type(1), "GEMM");
}

// RMSNorm wrappers whose argument order differs by engine: n = the first
// tensor's size, C = the last 1-D tensor (the weight). "add" variants also read
// and write the residual: +n FLOPs, +2·n·bpe bytes.
std::optional<OpCost> rms_norm_like(const Args& a, bool fused_add) {
  const Shape& x = a.dim(0);
  int64_t c = 0;
  for (size_t i = 1; i < a.dims.size(); ++i) {
    if (a.dims[i].size() == 1 && a.bpe(i) > 0) c = a.dims[i][0];
  }
  const int bpe = a.bpe(0);
  if (x.empty() || c <= 0 || bpe == 0 || x.back() != c) return std::nullopt;
  const int64_t n = numel(x);
  OpCost cost = rms_norm(n, c, true, bpe, bpe);
  if (fused_add) {
    cost.flops += d(n);
    cost.bytes += 2.0 * d(n) * bpe;
    auto p = nlohmann::json::parse(cost.params_json);
    p["fused_add"] = true;
    cost.params_json = p.dump();
  }
  return tagged(std::move(cost), false, a.type(0), "norm");
}

// fused_experts(hidden[T,H], w1[E, 2I or I, H], w2[E, H, I], topk_weights[T,k], topk_ids[T,k],
// ...).
std::optional<OpCost> fused_experts(const Args& a) {
  const Shape& x = a.dim(0);
  const Shape& w1 = a.dim(1);
  const Shape& w2 = a.dim(2);
  const Shape& topk = a.dim(3);
  if (x.size() != 2 || w1.size() != 3 || w2.size() != 3 || topk.size() != 2) return std::nullopt;
  const int64_t I = w2[2];
  const bool gated = w1[1] == 2 * I;
  if (w1[0] != w2[0] || w1[2] != x[1] || w2[1] != x[1] || !(gated || w1[1] == I)) {
    return std::nullopt;
  }
  if (a.bpe(0) == 0 || a.bpe(1) == 0) return std::nullopt;
  return tagged(moe_fused(x[0], x[1], I, w1[0], topk[1], gated, a.bpe(0), a.bpe(1), a.bpe(0)), true,
                a.type(1), "MoE");
}

// reshape_and_cache(key[T,Hkv,d], value[T,Hkv,d], caches...): copies K and V
// into the cache: each element read once and written once, no FLOPs.
std::optional<OpCost> kv_cache_write(const Args& a) {
  const Shape& k = a.dim(0);
  const Shape& v = a.dim(1);
  if (k.empty() || v.empty() || a.bpe(0) == 0 || a.bpe(1) == 0) return std::nullopt;
  OpCost c;
  c.bytes = 2.0 * (d(numel(k)) * a.bpe(0) + d(numel(v)) * a.bpe(1));
  c.params_json = nlohmann::json{{"n_k", numel(k)}, {"n_v", numel(v)}, {"bpe", a.bpe(0)}}.dump();
  return tagged(std::move(c), false, a.type(0), "memory");
}

// q[T, Hq, d_qk], k[T', Hkv, d_qk], v[T', Hkv, d_v]: the heads and head sizes;
// the token counts come from the step annotation.
std::optional<OpCost> step_attention(const Args& a, const StepAnnotation* step) {
  const Shape& q = a.dim(0);
  const Shape& k = a.dim(1);
  const Shape& v = a.dim(2);
  if (!step || q.size() != 3 || k.size() != 3 || v.size() != 3 || q[2] != k[2] || k[1] != v[1]) {
    return std::nullopt;
  }
  if (a.bpe(0) == 0) return std::nullopt;
  const int bpe_kv = a.bpe(1) > 0 ? a.bpe(1) : a.bpe(0);
  auto c = paged_attention(*step, q[1], k[1], q[2], v[2], a.bpe(0), bpe_kv);
  if (!c) return std::nullopt;
  return tagged(std::move(*c), true, a.type(0), "SDPA");
}

// flash_attn's dense forward: q[B, Nq, Hq, d_qk], k[B, Nkv, Hkv, d_qk],
// v[B, Nkv, Hkv, d_v]; is_causal is argument 5 (after dropout_p, softmax_scale).
std::optional<OpCost> flash_attn_dense(const Args& a, const std::vector<std::string>& args) {
  const Shape& q = a.dim(0);
  const Shape& k = a.dim(1);
  const Shape& v = a.dim(2);
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || q[0] != k[0] || q[3] != k[3] ||
      k[1] != v[1] || k[2] != v[2] || a.bpe(0) == 0) {
    return std::nullopt;
  }
  const bool causal = args.size() > 5 && args[5] == "True";
  return tagged(sdpa(q[0], q[2], k[2], q[1], k[1], q[3], v[3], causal, a.bpe(0)), true, a.type(0),
                "SDPA");
}

}  // namespace

std::optional<OpCost> paged_attention(const StepAnnotation& step, int64_t Hq, int64_t Hkv,
                                      int64_t d_qk, int64_t d_v, int bpe_qo, int bpe_kv) {
  const PhaseTokens& ctx = step.context;
  const PhaseTokens& gen = step.generation;
  if (!(ctx.detailed || ctx.requests == 0) || !(gen.detailed || gen.requests == 0)) {
    return std::nullopt;
  }
  // Context sequences are causal over their new tokens: query j of a sequence
  // with q new and k total tokens sees k − q + j + 1 keys.
  const double ctx_entries = d(ctx.sum_qk) - (d(ctx.sum_qq) - d(ctx.sum_q)) / 2.0;
  const double gen_entries = d(gen.sum_qk);
  const double entries = ctx_entries + gen_entries;
  const int64_t sq = ctx.sum_q + gen.sum_q;
  const int64_t sk = ctx.sum_k + gen.sum_k;
  if (sq <= 0 || sk <= 0) return std::nullopt;
  OpCost c;
  c.flops = 2.0 * d(Hq) * d(d_qk + d_v) * entries;
  c.bytes = d(sq) * d(Hq) * d(d_qk + d_v) * bpe_qo + d(sk) * d(Hkv) * d(d_qk + d_v) * bpe_kv;
  c.params_json = nlohmann::json{
      {"context_requests", ctx.requests},
      {"generation_requests", gen.requests},
      {"sum_q", sq},
      {"sum_k", sk},
      {"score_entries", entries},
      {"H_Q", Hq},
      {"H_KV", Hkv},
      {"d_h_qk", d_qk},
      {"d_h_v", d_v},
      {"bpe_qo", bpe_qo},
      {"bpe_kv",
       bpe_kv}}.dump();
  return c;
}

std::optional<OpCost> model_for_inference_op(std::string_view name, const Dims& dims,
                                             const std::vector<std::string>& types,
                                             std::string_view concrete_json,
                                             const StepAnnotation* step) {
  return model_for_inference_op(name, dims, types, parse_input_types(concrete_json), step);
}

std::optional<OpCost> model_for_inference_op(std::string_view name, const Dims& dims,
                                             const std::vector<std::string>& types,
                                             const std::vector<std::string>& concrete,
                                             const StepAnnotation* step) {
  const Args a{dims, types};
  if (starts(name, "aten::")) {
    // Varlen flash attention records 3-D q/k/v ([total_tokens, H, d]).
    if ((name == "aten::_flash_attention_forward" ||
         name == "aten::_efficient_attention_forward") &&
        a.dim(0).size() == 3) {
      return step_attention(a, step);
    }
    return model_for_op(name, dims, types, concrete);
  }
  if (has(name, "flash_attn") && !has(name, "varlen") && a.dim(0).size() == 4) {
    return flash_attn_dense(a, concrete);
  }
  if (has(name, "unified_attention") || has(name, "paged_attention") || has(name, "varlen") ||
      name == "vllm::attention" || has(name, "flash_attn")) {
    return step_attention(a, step);
  }
  if (has(name, "unquantized_gemm") || name == "vllm::rocm_unquantized_gemm_impl") {
    return linear_like(a);
  }
  if (has(name, "cutlass_scaled_mm")) return cutlass_scaled_mm(a);
  if (has(name, "fused_experts") || has(name, "fused_moe")) return fused_experts(a);
  if (has(name, "reshape_and_cache")) return kv_cache_write(a);
  if (has(name, "rms_norm") || has(name, "rmsnorm")) {
    return rms_norm_like(a, has(name, "add"));
  }
  return std::nullopt;
}

}  // namespace magpie::analysis
