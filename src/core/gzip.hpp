#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/file_io.hpp"

struct inflate_state;  // ISA-L's

namespace magpie {

// Deflate expands at most about 1032:1, so a gzip trailer (ISIZE) promising
// more than that for the bytes at hand is wrong (damage, or a hostile file):
// it is never used to size an allocation. Returns ISIZE when plausible, else 0.
size_t plausible_gzip_size(size_t compressed_bytes, uint32_t isize);

bool is_gzip(std::string_view bytes);

// What an ISA-L inflate error code means, in words.
std::string_view isal_inflate_error(int rc);

// ISA-L's streaming inflate over gzip members, one after another: the one
// inflater every gzip path uses (gunzip, read_text_head; ArrivingText drives
// ISA-L itself for its window).
class GzipInflater {
 public:
  GzipInflater();
  ~GzipInflater();
  GzipInflater(GzipInflater&&) noexcept;
  GzipInflater& operator=(GzipInflater&&) noexcept;
  struct Step {
    int rc = 0;  // ISA-L's: 0 ok, < 0 an error (isal_inflate_error)
    size_t consumed = 0;
    size_t produced = 0;
    bool member_done = false;  // a member ended (trailer checked); the next byte starts another
  };
  // Inflates from the front of `in` (advanced past what was used) into
  // out[0, room).
  Step inflate(std::string_view& in, char* out, size_t room);

 private:
  void start_member();
  std::unique_ptr<inflate_state> state_;
};

// Inflates every gzip member in `compressed`. `origin` names the file in errors
// (truncated or corrupt streams raise Error(kBadFormat) with the byte offset).
PaddedBuffer gunzip(std::string_view compressed, const std::string& origin);

}  // namespace magpie
