#include "trace/string_pool.hpp"

#include <cstring>

namespace magpie::trace {

namespace {
constexpr size_t kBlockSize = 1 << 20;
}

size_t StringViewHash::operator()(std::string_view s) const noexcept {
  constexpr uint64_t kMul1 = 0x9E3779B97F4A7C15ull, kMul2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t a = kMul1 ^ s.size(), b = kMul2;
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 16; p += 16, n -= 16) {
    uint64_t x, y;
    std::memcpy(&x, p, 8);
    std::memcpy(&y, p + 8, 8);
    a = (a ^ x) * kMul2;
    b = (b ^ y) * kMul1;
    a ^= a >> 31;
    b ^= b >> 29;
  }
  uint64_t x = 0, y = 0;
  std::memcpy(&x, p, n < 8 ? n : 8);
  if (n > 8) std::memcpy(&y, p + 8, n - 8);
  a = (a ^ x) * kMul2;
  b = (b ^ y) * kMul1;
  uint64_t h = (a ^ (b >> 32) ^ (b << 32)) * kMul1;
  return static_cast<size_t>(h ^ (h >> 32));
}

StringPool::StringPool() {
  views_.emplace_back();
  index_.emplace(std::string_view{}, kEmptyString);
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
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  char* p = allocate(s.size());
  std::memcpy(p, s.data(), s.size());
  std::string_view stored(p, s.size());
  auto id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

StringId StringPool::find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? kNotInterned : it->second;
}

}  // namespace magpie::trace
