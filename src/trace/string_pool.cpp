#include "trace/string_pool.hpp"

#include <cstring>

namespace magpie::trace {

namespace {
constexpr size_t kBlockSize = 1 << 20;
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
