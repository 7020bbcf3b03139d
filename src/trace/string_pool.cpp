#include "trace/string_pool.hpp"

#include <cstring>

#include "trace/open_addressing.hpp"

namespace magpie::trace {

namespace {
constexpr size_t kBlockSize = 1 << 20;

inline uint64_t load8(const char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}
inline uint64_t mix(uint64_t a, uint64_t x, uint64_t mul) {
  a = (a ^ x) * mul;
  return a ^ (a >> 31);
}

// Three CRC32C lanes (SSE4.2's instruction: one 8-byte step per cycle per
// lane) where the build targets it (x86-64 builds target Haswell); the
// multiply-xor lanes elsewhere. Only the pool's probes see the value.
#ifdef __SSE4_2__
uint64_t crc_hash(const char* p, size_t n) {
  uint64_t a = 0x9E3779B97F4A7C15ull ^ n, b = 0xC2B2AE3D27D4EB4Full, c = 0x165667B19E3779F9ull;
  for (; n >= 24; p += 24, n -= 24) {
    a = __builtin_ia32_crc32di(a, load8(p));
    b = __builtin_ia32_crc32di(b, load8(p + 8));
    c = __builtin_ia32_crc32di(c, load8(p + 16));
  }
  // The last 0-23 bytes, as up to three zero-extended words.
  uint64_t x = 0, y = 0, z = 0;
  if (n > 16) {
    x = load8(p);
    y = load8(p + 8);
    std::memcpy(&z, p + 16, n - 16);
  } else if (n > 8) {
    x = load8(p);
    std::memcpy(&y, p + 8, n - 8);
  } else if (n > 0) {
    std::memcpy(&x, p, n);  // an empty view's data() may be null
  }
  a = __builtin_ia32_crc32di(a, x);
  b = __builtin_ia32_crc32di(b, y);
  c = __builtin_ia32_crc32di(c, z);
  uint64_t h = (a | (b << 32)) ^ (c * 0x9E3779B97F4A7C15ull);
  h *= 0xC2B2AE3D27D4EB4Full;
  return h ^ (h >> 29);
}
#else
uint64_t mix_hash(const char* p, size_t n) {
  constexpr uint64_t kMul1 = 0x9E3779B97F4A7C15ull, kMul2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t a = kMul1 ^ n, b = kMul2;
  for (; n >= 16; p += 16, n -= 16) {
    a = mix(a, load8(p), kMul2);
    b = mix(b, load8(p + 8), kMul1);
  }
  uint64_t x = 0, y = 0;
  if (n > 0) std::memcpy(&x, p, n < 8 ? n : 8);  // an empty view's data() may be null
  if (n > 8) std::memcpy(&y, p + 8, n - 8);
  a = mix(a, x, kMul2);
  b = mix(b, y, kMul1);
  uint64_t h = (a ^ (b >> 32) ^ (b << 32)) * kMul1;
  return h ^ (h >> 32);
}
#endif
}  // namespace

size_t StringViewHash::operator()(std::string_view s) const noexcept {
#ifdef __SSE4_2__
  return static_cast<size_t>(crc_hash(s.data(), s.size()));
#else
  return static_cast<size_t>(mix_hash(s.data(), s.size()));
#endif
}

StringPool::StringPool() : index_(1024) {
  views_.emplace_back();
  hashes_.push_back(0);  // the empty string is never looked up by hash
}

void StringPool::grow_index() {
  grow_open_addressing(
      index_, [](const Slot& s) { return s.id == kNotInterned; }, [](const Slot& s) { return s.hash; });
}

char* StringPool::allocate(size_t n) {
  if (n > block_left_) {
    size_t size = std::max(n, kBlockSize);
    blocks_.emplace_back(new char[size]);
    block_cursor_ = blocks_.back().get();
    block_left_ = size;
  }
  char* p = block_cursor_;
  block_cursor_ += n;
  block_left_ -= n;
  return p;
}

StringId StringPool::intern(std::string_view s) {
  if (s.empty()) return kEmptyString;  // most optional args are absent
  return intern(s, StringViewHash{}(s));
}

StringId StringPool::intern(std::string_view s, uint64_t h) {
  if (s.empty()) return kEmptyString;
  size_t mask = index_.size() - 1;
  size_t i = h & mask;
  for (; index_[i].id != kNotInterned; i = (i + 1) & mask) {
    if (index_[i].hash == h && views_[index_[i].id] == s) return index_[i].id;
  }
  char* p = allocate(s.size());
  std::memcpy(p, s.data(), s.size());
  auto id = static_cast<StringId>(views_.size());
  views_.emplace_back(p, s.size());
  hashes_.push_back(h);
  index_[i] = {h, id};
  if (views_.size() * 2 > index_.size()) grow_index();  // keeps probes short
  return id;
}

StringId StringPool::find(std::string_view s) const {
  if (s.empty()) return kEmptyString;
  const uint64_t h = StringViewHash{}(s);
  const size_t mask = index_.size() - 1;
  for (size_t i = h & mask; index_[i].id != kNotInterned; i = (i + 1) & mask) {
    if (index_[i].hash == h && views_[index_[i].id] == s) return index_[i].id;
  }
  return kNotInterned;
}

}  // namespace magpie::trace
