#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/file_io.hpp"

namespace magpie {

// Deflate expands at most about 1032:1, so a gzip trailer (ISIZE) promising
// more than that for the bytes at hand is wrong (damage, or a hostile file):
// it is never used to size an allocation. Returns ISIZE when plausible, else 0.
size_t plausible_gzip_size(size_t compressed_bytes, uint32_t isize);

bool is_gzip(std::string_view bytes);

// Inflates every gzip member in `compressed`. `origin` names the file in errors
// (truncated or corrupt streams raise Error(kBadFormat) with the byte offset).
PaddedBuffer gunzip(std::string_view compressed, const std::string& origin);

}  // namespace magpie
