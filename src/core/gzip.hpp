#pragma once
#include <string_view>

#include "core/file_io.hpp"

namespace magpie {

bool is_gzip(std::string_view bytes);

// Inflates every gzip member in `compressed`. `origin` names the file in errors
// (truncated or corrupt streams raise Error(kBadFormat) with the byte offset).
PaddedBuffer gunzip(std::string_view compressed, const std::string& origin);

}  // namespace magpie
