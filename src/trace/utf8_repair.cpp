#include "trace/utf8_repair.hpp"

namespace magpie::trace {

namespace {
bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }
}  // namespace

size_t repair_utf8(char* data, size_t len) {
  auto* p = reinterpret_cast<unsigned char*>(data);
  size_t replaced = 0, i = 0;
  while (i < len) {
    unsigned char c = p[i];
    size_t need;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
    } else {
      p[i++] = '?';
      ++replaced;
      continue;
    }
    bool ok = i + need < len;
    for (size_t k = 1; ok && k <= need; ++k) ok = is_cont(p[i + k]);
    if (ok && need == 2) {
      // Overlong (E0 < A0) and surrogate (ED >= A0) forms are invalid.
      if ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0)) ok = false;
    }
    if (ok && need == 3) {
      if ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90)) ok = false;
    }
    if (ok) {
      i += need + 1;
    } else {
      p[i++] = '?';
      ++replaced;
    }
  }
  return replaced;
}

}  // namespace magpie::trace
