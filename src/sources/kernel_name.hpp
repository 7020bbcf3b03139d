#pragma once
// Kernel names as profilers report them, normalised and classified so that
// names from NVIDIA (Kineto, nsys) and AMD (Kineto, rocprofv3) traces compare
// and can be looked up in source.
#include <string>
#include <string_view>

namespace magpie::sources {

enum class KernelFamily {
  kTriton,
  kInductor,
  kCublas,  // incl. nvjet, sm90_xmma, cublasLt
  kCutlass,
  kCudnn,  // incl. MIOpen, its AMD counterpart
  kFlashAttention,
  kNccl,     // incl. rccl
  kTensile,  // Cijk_, and rocBLAS/hipBLASLt kernels
  kCk,       // composable kernel, ck_tile
  kAiter,
  kAtenNative,  // at::native
  kUserCuda,    // plain __global__ name
  kMemcpy,      // runtime copies/fills, incl. __amd_rocclr_* blit kernels
  kUnknown,
};
std::string_view to_string(KernelFamily family);

enum class KernelCategory {
  kGemm,
  kAttention,
  kNormalization,
  kElementwise,
  kReduction,
  kCommunication,
  kMemory,  // memcpy/memset
  kOther,
};
// "GEMM", "attention", "normalization", "elementwise", "reduction",
// "communication", "memcpy/memset", "other".
std::string_view to_string(KernelCategory category);

struct KernelName {
  std::string raw;  // as in the trace
  // abi::__cxa_demangle of a mangled ("_Z...") name, else raw; a ROCm ".kd"
  // suffix is dropped in both cases.
  std::string demangled;
  // Return type, template arguments, parameters and noise namespaces dropped:
  // "at::native::vectorized_elementwise_kernel", "triton_poi_fused_add_0",
  // "Memcpy DtoD". Wrapper kernels keep the wrapped type:
  // "cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>".
  std::string normalized;
  // The bare identifier to look for in source: "vectorized_elementwise_kernel";
  // Triton: the @triton.jit function name (specialisation suffix dropped);
  // Inductor: the generated function name. Empty for runtime copies.
  std::string search_symbol;
  KernelFamily family = KernelFamily::kUnknown;
  // Code the user does not own: vendor and framework libraries, runtime copies.
  bool library_owned = false;
  KernelCategory category = KernelCategory::kOther;
  // Magpie's vocabulary (docs/MAGPIE_COMPATIBILITY.md §5): annotation, tensile_gemm,
  // hip_cpp, aiter, ck_tile, aten_native, inductor, triton_jit, unknown.
  std::string magpie_kind;
  // attention, gemm, moe_gemm, layernorm, softmax, copy, elementwise,
  // indexing, reduce, router, kv_cache, blit; "" when none fits.
  std::string magpie_category;
};

KernelName parse_kernel_name(std::string_view raw);

}  // namespace magpie::sources
