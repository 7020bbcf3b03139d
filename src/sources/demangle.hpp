#pragma once
// Itanium C++ demangling for kernel symbols as profilers report them.
#include <optional>
#include <string>
#include <string_view>

namespace magpie::sources {

// ROCm tools append ".kd" (the kernel descriptor symbol) to kernel names.
std::string_view strip_kernel_descriptor_suffix(std::string_view symbol);

// Demangles "_Z..." symbols; std::nullopt when `symbol` is not mangled.
// g++ 12's demangler rejects newer encodings seen in ROCm kernels (DF16b for
// bfloat16, Tn template-parameter declarations); then the result is rebuilt as
// far as we can: bfloat16 via a stand-in type, else the qualified name alone.
std::optional<std::string> demangle(std::string_view symbol);

}  // namespace magpie::sources
