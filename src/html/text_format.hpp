#pragma once
// Numbers and names as the HTML reports print them.
#include <string>
#include <string_view>

namespace magpie::html {

std::string format_number(double v);                           // 3 significant decimals, "" for NaN
std::string format_us(double us);                              // "812 µs", "12.3 ms", "4.56 s"
std::string shorten(std::string_view text, size_t max_chars);  // "…" in the middle

}  // namespace magpie::html
