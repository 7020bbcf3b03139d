#pragma once
// Family and category of a kernel from its (normalised) name alone.
#include <cstdint>
#include <string_view>

#include "sources/kernel_name.hpp"

namespace magpie::sources::detail {

// The finer category vocabulary; KernelCategory and Magpie's category strings
// are both projections of it.
enum class NameCategory : uint8_t {
  kAttention,
  kGemm,
  kMoeGemm,
  kNorm,
  kSoftmax,
  kCopy,
  kElementwise,
  kIndexing,
  kReduce,
  kRouter,
  kKvCache,
  kBlit,
  kCommunication,
  kOther,
};

struct NameFacts {
  std::string_view demangled;   // full text, template arguments included
  std::string_view normalized;  // KernelName::normalized
  bool is_cpp = false;          // mangled or a C++ signature (vs a bare Triton-style name)
};

KernelFamily classify_family(const NameFacts& facts);
bool is_library_owned(KernelFamily family, std::string_view normalized);
NameCategory classify_category(KernelFamily family, const NameFacts& facts);
KernelCategory to_kernel_category(NameCategory category);
std::string_view to_magpie_category(NameCategory category);
std::string_view to_magpie_kind(KernelFamily family, std::string_view normalized);

// Triton kernels once carried a specialisation suffix ("_0d1d2d3c") after the
// @triton.jit function name; returns the name without it.
std::string_view strip_triton_specialization(std::string_view name);

}  // namespace magpie::sources::detail
