#include "core/gzip.hpp"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <memory>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace magpie {

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

size_t plausible_gzip_size(size_t compressed_bytes, uint32_t isize) {
  constexpr size_t kMaxDeflateRatio = 1032;
  return isize <= compressed_bytes * kMaxDeflateRatio + 64 ? isize : 0;
}

std::string_view isal_inflate_error(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK:
      return "invalid deflate block";
    case ISAL_INVALID_SYMBOL:
      return "invalid deflate code";
    case ISAL_INVALID_LOOKBACK:
      return "back-reference before the start of the data";
    case ISAL_INVALID_WRAPPER:
      return "not a gzip member header";
    case ISAL_UNSUPPORTED_METHOD:
      return "compression method is not deflate";
    case ISAL_INCORRECT_CHECKSUM:
      return "CRC32 or length in the trailer does not match the data";
    case ISAL_NEED_DICT:
      return "stream needs a preset dictionary";
    default:
      return "inflate error";
  }
}

GzipInflater::GzipInflater() : state_(std::make_unique<inflate_state>()) { start_member(); }
GzipInflater::~GzipInflater() = default;
GzipInflater::GzipInflater(GzipInflater&&) noexcept = default;
GzipInflater& GzipInflater::operator=(GzipInflater&&) noexcept = default;

void GzipInflater::start_member() {
  isal_inflate_init(state_.get());
  state_->crc_flag = ISAL_GZIP;  // parse the header, check CRC32 and ISIZE
}

GzipInflater::Step GzipInflater::inflate(std::string_view& in, char* out, size_t room) {
  // ISA-L counts in 32 bits: hand it at most 1 GiB of either side per call.
  constexpr size_t kMaxCall = size_t{1} << 30;
  state_->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
  state_->avail_in = static_cast<uint32_t>(std::min(in.size(), kMaxCall));
  state_->next_out = reinterpret_cast<uint8_t*>(out);
  state_->avail_out = static_cast<uint32_t>(std::min(room, kMaxCall));
  const uint32_t given_in = state_->avail_in;
  const uint32_t given_out = state_->avail_out;
  Step s;
  s.rc = isal_inflate(state_.get());
  s.consumed = given_in - state_->avail_in;
  s.produced = given_out - state_->avail_out;
  in.remove_prefix(s.consumed);
  s.member_done = s.rc == ISAL_DECOMP_OK && state_->block_state == ISAL_BLOCK_FINISH;
  if (s.member_done) start_member();  // the next bytes, if any, begin another member
  return s;
}

PaddedBuffer gunzip(std::string_view in, const std::string& origin) {
  if (in.size() < 18) {
    throw Error(ErrorKind::kBadFormat, "gzip file is too short to hold a stream", origin, 0,
                "the file was cut short; re-copy or re-export the trace");
  }
  // ISIZE (last 4 bytes) is the size of the last member mod 2^32: for the
  // common single-member file it sizes the output exactly. Otherwise (several
  // members, over 4 GiB, or a lying trailer) the output grows as it inflates.
  uint32_t isize;
  std::memcpy(&isize, in.data() + in.size() - 4, 4);
  size_t cap = plausible_gzip_size(in.size(), isize);
  if (cap == 0) cap = std::max<size_t>(in.size() * 4, size_t{1} << 20);
  PaddedBuffer out(cap);
  const size_t total = in.size();
  std::string_view rest = in;
  size_t produced = 0;
  bool in_member = true;  // a member has begun and not ended
  GzipInflater inflater;
  while (!rest.empty() || in_member) {
    if (produced == cap) {
      PaddedBuffer bigger(cap * 2);
      std::memcpy(bigger.data(), out.data(), produced);
      out = std::move(bigger);
      cap *= 2;
    }
    const GzipInflater::Step s = inflater.inflate(rest, out.data() + produced, cap - produced);
    produced += s.produced;
    if (s.rc < 0) {
      throw Error(ErrorKind::kBadFormat,
                  "gzip data is corrupt (" + std::string(isal_inflate_error(s.rc)) + ")", origin,
                  total - rest.size(), "the file is damaged; re-export the trace");
    }
    in_member = !s.member_done;
    if (in_member && s.consumed == 0 && s.produced == 0 && !rest.empty()) {
      throw Error(ErrorKind::kBadFormat, "gzip data is corrupt (inflate made no progress)", origin,
                  total - rest.size(), "the file is damaged; re-export the trace");
    }
    if (in_member && rest.empty() && produced < cap) {
      // All input taken, room left, and the member has not ended.
      throw Error(ErrorKind::kBadFormat, "gzip stream is truncated", origin, total,
                  "the file was cut short; re-copy or re-export the trace");
    }
    if (s.member_done && !rest.empty()) in_member = true;  // another member follows
  }
  out.shrink(produced);
  return out;
}

}  // namespace magpie
