#include "sources/kernel_name.hpp"

#include <cctype>

#include "sources/demangle.hpp"
#include "sources/detail/cpp_name.hpp"
#include "sources/detail/kernel_classifier.hpp"

namespace magpie::sources {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Kineto names runtime copies "Memcpy HtoD (Pageable -> Device)", "Memset (Device)".
bool is_runtime_copy(std::string_view name) {
  return name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("memcpy") ||
         name.starts_with("memset");
}

}  // namespace

std::string_view to_string(KernelFamily family) {
  switch (family) {
    case KernelFamily::kTriton:
      return "triton";
    case KernelFamily::kInductor:
      return "inductor";
    case KernelFamily::kCublas:
      return "cublas";
    case KernelFamily::kCutlass:
      return "cutlass";
    case KernelFamily::kCudnn:
      return "cudnn";
    case KernelFamily::kFlashAttention:
      return "flash_attention";
    case KernelFamily::kNccl:
      return "nccl";
    case KernelFamily::kTensile:
      return "tensile";
    case KernelFamily::kCk:
      return "ck";
    case KernelFamily::kAiter:
      return "aiter";
    case KernelFamily::kAtenNative:
      return "aten_native";
    case KernelFamily::kUserCuda:
      return "user_cuda";
    case KernelFamily::kMemcpy:
      return "memcpy";
    case KernelFamily::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(KernelCategory category) {
  switch (category) {
    case KernelCategory::kGemm:
      return "GEMM";
    case KernelCategory::kAttention:
      return "attention";
    case KernelCategory::kNormalization:
      return "normalization";
    case KernelCategory::kElementwise:
      return "elementwise";
    case KernelCategory::kReduction:
      return "reduction";
    case KernelCategory::kCommunication:
      return "communication";
    case KernelCategory::kMemory:
      return "memcpy/memset";
    case KernelCategory::kOther:
      return "other";
  }
  return "other";
}

KernelName parse_kernel_name(std::string_view raw) {
  KernelName k;
  k.raw = std::string(raw);
  const std::string_view name = trim(strip_kernel_descriptor_suffix(trim(raw)));
  auto demangled = demangle(name);
  const bool mangled = demangled.has_value();
  k.demangled = mangled ? std::move(*demangled) : std::string(name);

  bool is_cpp = false;
  if (!mangled && is_runtime_copy(k.demangled)) {
    k.normalized = std::string(trim(k.demangled.substr(0, k.demangled.find(" ("))));
  } else if (mangled || k.demangled.find_first_of("(<:") != std::string::npos) {
    is_cpp = true;
    detail::CppName cpp = detail::parse_cpp_name(k.demangled);
    k.normalized = std::move(cpp.qualified);
    k.search_symbol = std::move(cpp.symbol);
  } else {
    k.normalized = k.demangled;
    k.search_symbol = k.normalized;
  }

  const detail::NameFacts facts{k.demangled, k.normalized, is_cpp};
  k.family = detail::classify_family(facts);
  if (k.family == KernelFamily::kTriton) {
    k.search_symbol = std::string(detail::strip_triton_specialization(k.normalized));
  }
  k.library_owned = detail::is_library_owned(k.family, k.normalized);
  const detail::NameCategory category = detail::classify_category(k.family, facts);
  k.category = detail::to_kernel_category(category);
  k.magpie_category = std::string(detail::to_magpie_category(category));
  k.magpie_kind = std::string(detail::to_magpie_kind(k.family, k.normalized));
  return k;
}

}  // namespace magpie::sources
