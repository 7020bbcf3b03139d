#pragma once
// Reading the function name out of a demangled C++ kernel signature.
#include <string>
#include <string_view>

namespace magpie::sources::detail {

struct CppName {
  // Namespaces kept, noise namespaces, template arguments, parameters and
  // return type dropped: "at::native::vectorized_elementwise_kernel". Wrapper
  // kernels whose identity is their first type argument keep it:
  // "cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>".
  std::string qualified;
  // The identifier a source definition would carry ("vectorized_elementwise_kernel",
  // or the wrapped type's name for wrapper kernels).
  std::string symbol;
};

// Works on plain identifiers too (they come back unchanged).
CppName parse_cpp_name(std::string_view demangled);

// Drops "(anonymous namespace)::" and versioned inline namespaces such as
// "ROCPRIM_400200_NS::" that only encode a library build.
std::string strip_noise_namespaces(std::string_view name);

}  // namespace magpie::sources::detail
