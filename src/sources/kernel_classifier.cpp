#include "sources/detail/kernel_classifier.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <vector>

namespace magpie::sources::detail {
namespace {

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Lower-case words of an identifier: split at non-alphanumerics and at
// camelCase humps ("topkGatingSoftmax" -> topk, gating, softmax).
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!std::isalnum(c)) {
      flush();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(s[i - 1]))) flush();
    cur.push_back(static_cast<char>(std::tolower(c)));
  }
  flush();
  return out;
}

// Keyword tests over one name: substrings for distinctive keywords, whole
// words for short ones that would hit inside other words ("add" in "pad").
class Keywords {
 public:
  explicit Keywords(std::string_view name) : lower_(to_lower(name)), words_(words(name)) {}
  bool has(std::initializer_list<std::string_view> keys) const {
    return std::any_of(keys.begin(), keys.end(),
                       [&](std::string_view k) { return lower_.find(k) != std::string::npos; });
  }
  bool word(std::initializer_list<std::string_view> keys) const {
    return std::any_of(words_.begin(), words_.end(), [&](const std::string& w) {
      return std::find(keys.begin(), keys.end(), w) != keys.end();
    });
  }
  bool starts(std::initializer_list<std::string_view> keys) const {
    return std::any_of(keys.begin(), keys.end(),
                       [&](std::string_view k) { return lower_.starts_with(k); });
  }

 private:
  std::string lower_;
  std::vector<std::string> words_;
};

// Pre-cuBLASLt kernels are named "<arch>_<type>gemm_..." without namespace.
bool is_legacy_cublas(const Keywords& k) {
  return k.starts({"maxwell_", "volta_", "turing_", "ampere_", "ada_", "hopper_", "sm50_", "sm70_",
                   "sm75_", "sm80_", "sm86_", "sm89_", "sm90_", "sm100_"}) &&
         k.has({"gemm", "gemv"});
}

// CUB-like primitives, often vendored under another namespace (at_cuda_detail::cub::).
bool is_vendor_utility(std::string_view normalized) {
  for (std::string_view ns : {"cub::", "thrust::", "rocprim::", "hipcub::", "rocthrust::"}) {
    size_t pos = normalized.find(ns);
    if (pos == 0 || (pos != std::string_view::npos && normalized.substr(pos - 2, 2) == "::")) {
      return true;
    }
  }
  return false;
}

// Inductor names its generated kernels triton_<kind>_fused_<ops>_<n>.
bool is_inductor_name(std::string_view name) {
  if (!name.starts_with("triton_")) return false;
  if (name.find("_fused") != std::string_view::npos) return true;
  for (std::string_view k : {"triton_poi_", "triton_red_", "triton_per_", "triton_tem_",
                             "triton_for_", "triton_spl_", "triton_mm_", "triton_bmm_"}) {
    if (name.starts_with(k)) return true;
  }
  return false;
}

}  // namespace

std::string_view strip_triton_specialization(std::string_view name) {
  // Suffix "_0d1d2c3d...": argument indices from 0, each tagged d or c.
  const size_t us = name.rfind('_');
  if (us == std::string_view::npos || us == 0) return name;
  const std::string_view tail = name.substr(us + 1);
  if (tail.size() < 2 || tail[0] != '0') return name;
  for (size_t i = 0; i < tail.size();) {
    size_t j = i;
    while (j < tail.size() && std::isdigit(static_cast<unsigned char>(tail[j]))) ++j;
    if (j == i || j == tail.size() || (tail[j] != 'd' && tail[j] != 'c')) return name;
    i = j + 1;
  }
  return name.substr(0, us);
}

KernelFamily classify_family(const NameFacts& f) {
  const Keywords k(f.normalized);
  if (k.starts({"memcpy", "memset", "__amd_rocclr_", "memory_copy"})) return KernelFamily::kMemcpy;
  if (k.has({"nccl", "rccl"})) return KernelFamily::kNccl;
  if (f.normalized.starts_with("Cijk_") || f.normalized.starts_with("Cij_") ||
      k.starts({"rocblas", "hipblaslt"})) {
    return KernelFamily::kTensile;
  }
  if (k.has({"cudnn", "implicit_convolve"}) || k.starts({"miopen"}) ||
      (k.has({"xmma"}) && k.has({"fprop", "dgrad", "wgrad", "conv"}))) {
    return KernelFamily::kCudnn;
  }
  if (k.starts({"ck_tile::", "ck::"})) return KernelFamily::kCk;
  if (k.starts({"aiter::"})) return KernelFamily::kAiter;
  if (k.starts({"nvjet", "cublas"}) || k.has({"xmma", "_cublas"}) || is_legacy_cublas(k)) {
    return KernelFamily::kCublas;
  }
  if (f.is_cpp && k.has({"flash_fwd", "flash_bwd", "flash::", "flashattn", "flash_attn", "fmha"})) {
    return KernelFamily::kFlashAttention;
  }
  if (k.has({"cutlass"})) return KernelFamily::kCutlass;
  if (k.starts({"at::", "c10::", "at_cuda_detail::"})) return KernelFamily::kAtenNative;
  if (!f.is_cpp) {
    if (is_inductor_name(f.normalized)) return KernelFamily::kInductor;
    if (is_identifier(f.normalized)) return KernelFamily::kTriton;
    return KernelFamily::kUnknown;
  }
  // cuBLAS's own kernels (gemv2T_kernel_val, gemmk1_kernel...) are templated on cublas types.
  if (f.demangled.find("cublas") != std::string_view::npos) return KernelFamily::kCublas;
  if (is_vendor_utility(f.normalized)) return KernelFamily::kUnknown;
  return KernelFamily::kUserCuda;
}

bool is_library_owned(KernelFamily family, std::string_view normalized) {
  switch (family) {
    case KernelFamily::kTriton:
    case KernelFamily::kInductor:
    case KernelFamily::kUserCuda:
      return false;
    case KernelFamily::kUnknown:
      return is_vendor_utility(normalized);
    default:
      return true;
  }
}

NameCategory classify_category(KernelFamily family, const NameFacts& f) {
  if (family == KernelFamily::kMemcpy) return NameCategory::kBlit;
  if (family == KernelFamily::kNccl) return NameCategory::kCommunication;
  const Keywords k(f.normalized);
  // Communication outside NCCL/RCCL counts as communication too, or exposed
  // communication reads 0%: expert-parallel dispatch/combine (DeepEP
  // deep_ep::internode/intranode, UCCL's ep::internode, AMD MoRI), NVSHMEM,
  // MSCCL++, and the engines' custom all-reduce (vLLM/SGLang/aiter
  // cross_device_reduce_1stage/2stage, quick all-reduce, TensorRT-LLM's
  // allreduce_fusion). docs/TRACELENS.md "Ranks, cycles and kinds of trace".
  if (k.has({"allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter",
             "reducescatter", "alltoall", "all_to_all", "cross_device_reduce", "deep_ep::",
             "ep::internode", "ep::intranode", "nvshmem", "mscclpp", "mori::", "quickreduce",
             "quick_reduce", "custom_ar", "one_shot_all", "two_shot_all"})) {
    return NameCategory::kCommunication;
  }
  if (family == KernelFamily::kCublas || family == KernelFamily::kTensile) {
    return NameCategory::kGemm;
  }
  if (k.has({"reshape_and_cache", "kv_cache", "kvcache", "concat_and_cache", "kv_indices",
             "copy_blocks", "swap_blocks"})) {
    return NameCategory::kKvCache;
  }
  if (k.has({"topk", "top_k", "routing", "router", "gating", "moe_align", "bitmatrix"})) {
    return NameCategory::kRouter;
  }
  if (family == KernelFamily::kFlashAttention ||
      k.has({"attention", "attn", "flash", "fmha", "paged", "sdpa"}) ||
      k.word({"mha", "mla", "mqa", "gqa"})) {
    return NameCategory::kAttention;
  }
  // cuDNN/MIOpen: layout transforms around a convolution are copies; the
  // convolution kernels themselves (fprop/dgrad/wgrad engines, implicit GEMMs,
  // Winograd, FFT) are matrix work, as the xmma implicit-GEMM ones: GEMM (the
  // kernel categories have no convolution of their own).
  if (family == KernelFamily::kCudnn) {
    if (k.has({"nchwtonhwc", "nhwctonchw", "nchwtonchwc", "transpose", "reorder", "permute"})) {
      return NameCategory::kCopy;
    }
    // The whole signature: cuDNN's CUTLASS wrappers name the engine in a template argument.
    const Keywords full(f.demangled);
    if (full.has({"fprop", "dgrad", "wgrad", "convolve", "conv2d", "conv3d", "conv_", "gemm",
                  "scudnn", "hcudnn", "winograd", "fft", "implicit", "precomputed", "xmma"})) {
      return NameCategory::kGemm;
    }
  }
  const bool gemm_like = k.has({"gemm", "gemv", "matmul", "nvjet", "cijk_", "xmma"}) ||
                         k.word({"mm", "bmm", "addmm", "baddbmm", "ogs"});
  if ((k.has({"moe", "expert"}) && gemm_like) || k.has({"matmul_ogs", "fused_moe", "fmoe"})) {
    return NameCategory::kMoeGemm;
  }
  if (gemm_like) return NameCategory::kGemm;
  if (k.has({"rmsnorm", "rms_norm", "layernorm", "layer_norm", "groupnorm", "group_norm",
             "batchnorm", "batch_norm", "instancenorm", "instance_norm", "gammabeta", "norm2d"}) ||
      k.word({"norm"})) {
    return NameCategory::kNorm;
  }
  if (k.has({"softmax"})) return NameCategory::kSoftmax;
  if (k.has({"reduce", "reduction", "argmax", "argmin", "cumsum", "cumprod", "triton_red_",
             "triton_per_", "lpnorm"}) ||
      k.word({"sum", "mean", "prod", "scan"})) {
    return NameCategory::kReduce;
  }
  if (k.has({"rotary", "rope"})) return NameCategory::kElementwise;  // not "embedding" lookups
  if (k.has({"gather", "scatter", "index_select", "indexselect", "embedding", "index_put",
             "indexput", "nonzero", "masked_select"})) {
    return NameCategory::kIndexing;
  }
  // ATen's generic elementwise loops say what they do in the functor argument.
  const bool aten_loop = family == KernelFamily::kAtenNative && k.has({"elementwise"});
  if (k.has({"copy", "catarray", "transpose", "permute"}) ||
      (aten_loop && f.demangled.find("copy_kernel") != std::string_view::npos)) {
    return NameCategory::kCopy;
  }
  if (k.has({"elementwise", "fused", "vectorized", "unrolled", "triton_poi_", "multi_tensor_apply",
             "dropout", "activation"}) ||
      k.word({"add",   "mul",    "sub",   "div", "silu", "gelu",  "relu",  "act",   "sigmoid",
              "tanh",  "exp",    "log",   "neg", "pow",  "fill",  "clamp", "scale", "cast",
              "quant", "swiglu", "geglu", "abs", "sqrt", "rsqrt", "where"})) {
    return NameCategory::kElementwise;
  }
  return NameCategory::kOther;
}

KernelCategory to_kernel_category(NameCategory c) {
  switch (c) {
    case NameCategory::kAttention:
      return KernelCategory::kAttention;
    case NameCategory::kGemm:
    case NameCategory::kMoeGemm:
      return KernelCategory::kGemm;
    case NameCategory::kNorm:
      return KernelCategory::kNormalization;
    case NameCategory::kSoftmax:
    case NameCategory::kReduce:
      return KernelCategory::kReduction;
    case NameCategory::kCopy:
    case NameCategory::kElementwise:
      return KernelCategory::kElementwise;
    case NameCategory::kCommunication:
      return KernelCategory::kCommunication;
    case NameCategory::kBlit:
      return KernelCategory::kMemory;
    case NameCategory::kIndexing:
    case NameCategory::kRouter:
    case NameCategory::kKvCache:
    case NameCategory::kOther:
      return KernelCategory::kOther;
  }
  return KernelCategory::kOther;
}

std::string_view to_magpie_category(NameCategory c) {
  switch (c) {
    case NameCategory::kAttention:
      return "attention";
    case NameCategory::kGemm:
      return "gemm";
    case NameCategory::kMoeGemm:
      return "moe_gemm";
    case NameCategory::kNorm:
      return "layernorm";
    case NameCategory::kSoftmax:
      return "softmax";
    case NameCategory::kCopy:
      return "copy";
    case NameCategory::kElementwise:
      return "elementwise";
    case NameCategory::kIndexing:
      return "indexing";
    case NameCategory::kReduce:
      return "reduce";
    case NameCategory::kRouter:
      return "router";
    case NameCategory::kKvCache:
      return "kv_cache";
    case NameCategory::kBlit:
      return "blit";
    case NameCategory::kCommunication:
    case NameCategory::kOther:
      return "";
  }
  return "";
}

std::string_view to_magpie_kind(KernelFamily family, std::string_view normalized) {
  if (normalized.starts_with("execute_context")) return "annotation";
  switch (family) {
    case KernelFamily::kTensile:
      return "tensile_gemm";
    case KernelFamily::kAiter:
      return "aiter";
    case KernelFamily::kCk:
      return "ck_tile";
    case KernelFamily::kAtenNative:
      return "aten_native";
    case KernelFamily::kInductor:
      return "inductor";
    case KernelFamily::kTriton:
      return "triton_jit";
    case KernelFamily::kUserCuda:
    case KernelFamily::kCutlass:
    case KernelFamily::kFlashAttention:
      return "hip_cpp";  // C++ kernels with source
    default:
      return "unknown";
  }
}

}  // namespace magpie::sources::detail
