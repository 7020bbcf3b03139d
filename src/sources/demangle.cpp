#include "sources/demangle.hpp"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <memory>

namespace magpie::sources {
namespace {

std::optional<std::string> cxa_demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return std::nullopt;
  return std::string(out.get());
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
}

// DF16b (std::bfloat16_t) is unknown to g++ 12. Dd (decimal64) is another
// non-substitutable builtin, so swapping it in keeps back-references valid;
// kernels never use decimal floats, so the swap back is unambiguous.
std::optional<std::string> demangle_with_bf16_stand_in(std::string mangled) {
  if (mangled.find("DF16b") == std::string::npos || mangled.find("Dd") != std::string::npos) {
    return std::nullopt;
  }
  replace_all(mangled, "DF16b", "Dd");
  auto out = cxa_demangle(mangled);
  if (out) replace_all(*out, "decimal64", "__bf16");
  return out;
}

// Reads the <nested-name> (or plain <source-name>) that opens a mangled
// function name: "_ZN5aiter3fooI..." -> "aiter::foo". Stops at the template
// arguments, which are what the old demangler could not read.
std::string qualified_name_prefix(std::string_view m) {
  size_t i = 2;                          // past "_Z"
  if (i < m.size() && m[i] == 'L') ++i;  // internal linkage
  const bool nested = i < m.size() && m[i] == 'N';
  if (nested) {
    ++i;
    while (i < m.size() &&
           (m[i] == 'r' || m[i] == 'V' || m[i] == 'K' || m[i] == 'R' || m[i] == 'O')) {
      ++i;
    }
  }
  std::string out;
  while (i < m.size()) {
    if (m.substr(i, 2) == "St") {
      out += "std::";
      i += 2;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(m[i]))) break;
    size_t len = 0;
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) {
      len = len * 10 + static_cast<size_t>(m[i] - '0');
      ++i;
    }
    if (len == 0 || i + len > m.size()) break;
    std::string_view part = m.substr(i, len);
    i += len;
    if (!part.starts_with("_GLOBAL__N")) {  // anonymous namespace: noise
      out += part;
      out += "::";
    }
    if (!nested) break;
  }
  if (out.size() >= 2) out.resize(out.size() - 2);
  return out;
}

}  // namespace

std::string_view strip_kernel_descriptor_suffix(std::string_view symbol) {
  if (symbol.ends_with(".kd")) symbol.remove_suffix(3);
  return symbol;
}

std::optional<std::string> demangle(std::string_view symbol) {
  symbol = strip_kernel_descriptor_suffix(symbol);
  if (!symbol.starts_with("_Z")) return std::nullopt;
  const std::string mangled(symbol);
  if (auto out = cxa_demangle(mangled)) return out;
  if (auto out = demangle_with_bf16_stand_in(mangled)) return out;
  std::string prefix = qualified_name_prefix(symbol);
  if (prefix.empty()) return mangled;
  return prefix;
}

}  // namespace magpie::sources
