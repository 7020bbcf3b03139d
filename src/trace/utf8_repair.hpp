#pragma once
#include <cstddef>

namespace magpie::trace {

// Replaces every byte that is not part of a valid UTF-8 sequence with '?', in
// place (same length, so byte offsets stay true). Returns the number replaced.
size_t repair_utf8(char* data, size_t len);

}  // namespace magpie::trace
