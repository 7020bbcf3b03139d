#include "core/gzip.hpp"

#include <libdeflate.h>
#include <zlib.h>

#include <cstring>
#include <memory>

#include "core/error.hpp"

namespace magpie {

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace {

// zlib's streaming inflate: used only when libdeflate's one-shot path cannot
// size the output (ISIZE wrong, e.g. > 4 GiB) so that we can still say exactly
// where a truncated stream ends.
PaddedBuffer gunzip_streaming(std::string_view in, const std::string& origin) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw Error(ErrorKind::kInternal, "zlib init failed");
  std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&zs, inflateEnd);
  size_t cap = std::max<size_t>(in.size() * 8, 1 << 20);
  PaddedBuffer out(cap);
  size_t produced = 0;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  for (;;) {
    if (produced == cap) {
      PaddedBuffer bigger(cap * 2);
      std::memcpy(bigger.data(), out.data(), produced);
      out = std::move(bigger);
      cap *= 2;
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(cap - produced, 1u << 30));
    size_t before = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      throw Error(ErrorKind::kBadFormat, "gzip stream is truncated", origin,
                  in.size(), "the file was cut short; re-copy or re-export the trace");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw Error(ErrorKind::kBadFormat,
                  std::string("gzip data is corrupt (") + (zs.msg ? zs.msg : "inflate error") + ")",
                  origin, in.size() - zs.avail_in, "the file is damaged; re-export the trace");
    }
  }
  out.shrink(produced);
  return out;
}

}  // namespace

size_t plausible_gzip_size(size_t compressed_bytes, uint32_t isize) {
  constexpr size_t kMaxDeflateRatio = 1032;
  return isize <= compressed_bytes * kMaxDeflateRatio + 64 ? isize : 0;
}

PaddedBuffer gunzip(std::string_view in, const std::string& origin) {
  if (in.size() < 18) {
    throw Error(ErrorKind::kBadFormat, "gzip file is too short to hold a stream", origin, 0,
                "the file was cut short; re-copy or re-export the trace");
  }
  // ISIZE (last 4 bytes) is the size of the last member mod 2^32. For the
  // common single-member file it is exact and lets libdeflate inflate in one go.
  uint32_t isize;
  std::memcpy(&isize, in.data() + in.size() - 4, 4);
  if (plausible_gzip_size(in.size(), isize) != isize) return gunzip_streaming(in, origin);
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  PaddedBuffer out(isize);
  size_t in_used = 0, out_used = 0;
  auto rc = libdeflate_gzip_decompress_ex(d.get(), in.data(), in.size(), out.data(), isize,
                                          &in_used, &out_used);
  if (rc == LIBDEFLATE_SUCCESS && in_used == in.size()) {
    out.shrink(out_used);
    return out;
  }
  // Multi-member, ISIZE wrap-around, or damage: the streaming path tells which.
  return gunzip_streaming(in, origin);
}

}  // namespace magpie
