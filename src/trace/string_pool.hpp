#pragma once
// Interned strings: every event name, category and arg text is stored once and
// referred to by a 32-bit id. Id 0 is always the empty string.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::trace {

using StringId = uint32_t;
inline constexpr StringId kEmptyString = 0;

// Kernel names run to hundreds of bytes and every event's name is looked up:
// a two-lane multiply-xor hash is several times faster than std::hash here.
struct StringViewHash {
  size_t operator()(std::string_view s) const noexcept;
};

class StringPool {
 public:
  StringPool();
  StringPool(StringPool&&) noexcept = default;
  StringPool& operator=(StringPool&&) noexcept = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  StringId intern(std::string_view s);
  // The same, with `s`'s StringViewHash already known (another pool's hash_of):
  // merging chunk pools into a trace's pool does not hash every string again.
  StringId intern(std::string_view s, uint64_t hash);
  uint64_t hash_of(StringId id) const { return hashes_[id]; }
  std::string_view view(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  // Returns the id if `s` was interned, else kNotInterned.
  static constexpr StringId kNotInterned = UINT32_MAX;
  StringId find(std::string_view s) const;

 private:
  char* allocate(size_t n);
  void grow_index();
  // Open addressing with the full hash kept per slot: a probe compares 8 bytes
  // before it touches the string (std::unordered_map with a "fast" hasher
  // compares the strings themselves along the bucket chain).
  struct Slot {
    uint64_t hash = 0;
    StringId id = kNotInterned;
  };
  std::vector<Slot> index_;
  std::vector<std::string_view> views_;
  std::vector<uint64_t> hashes_;  // per id
  std::deque<std::unique_ptr<char[]>> blocks_;  // stable storage; views point here
  char* block_cursor_ = nullptr;
  size_t block_left_ = 0;
};

}  // namespace magpie::trace
