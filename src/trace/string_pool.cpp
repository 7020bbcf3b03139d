#include "trace/string_pool.hpp"

#include <cstring>

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
}  // namespace

size_t StringViewHash::operator()(std::string_view s) const noexcept {
  constexpr uint64_t kMul1 = 0x9E3779B97F4A7C15ull, kMul2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t a = kMul1 ^ s.size(), b = kMul2;
  const char* p = s.data();
  size_t n = s.size();
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
  return static_cast<size_t>(h ^ (h >> 32));
}

StringPool::StringPool() : index_(1024) {
  views_.emplace_back();
  hashes_.push_back(0);  // the empty string is never looked up by hash
}

void StringPool::grow_index() {
  std::vector<Slot> bigger(index_.size() * 2);
  const size_t mask = bigger.size() - 1;
  for (const Slot& slot : index_) {
    if (slot.id == kNotInterned) continue;
    size_t i = slot.hash & mask;
    while (bigger[i].id != kNotInterned) i = (i + 1) & mask;
    bigger[i] = slot;
  }
  index_ = std::move(bigger);
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
