#include "html/text_format.hpp"

#include <fmt/format.h>

#include <cmath>

namespace magpie::html {

std::string format_number(double v) {
  if (!std::isfinite(v)) return "";
  if (v != 0 && std::fabs(v) < 0.01) return fmt::format("{:.3g}", v);
  return fmt::format("{:.3f}", v);
}

std::string format_us(double us) {
  if (us >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.1f} µs", us);
}

std::string shorten(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  // Byte positions are moved off UTF-8 continuation bytes so no character is cut.
  auto boundary = [&](size_t i) {
    while (i > 0 && i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  size_t head = boundary(max_chars * 2 / 3), tail = boundary(text.size() - (max_chars - head - 1));
  return std::string(text.substr(0, head)) + "…" + std::string(text.substr(tail));
}

}  // namespace magpie::html
