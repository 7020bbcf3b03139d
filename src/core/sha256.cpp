#include "core/sha256.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <fstream>

#include "core/error.hpp"

// FIPS 180-4 SHA-256, written out here so the core library needs no crypto
// dependency (the digests are receipts, not a security boundary).
namespace magpie {

namespace {

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

class Sha256 {
 public:
  void update(const unsigned char* data, size_t n) {
    length_ += n;
    while (n > 0) {
      size_t take = std::min(n, block_.size() - used_);
      std::copy(data, data + take, block_.begin() + static_cast<std::ptrdiff_t>(used_));
      used_ += take;
      data += take;
      n -= take;
      if (used_ == block_.size()) {
        compress();
        used_ = 0;
      }
    }
  }

  std::string hex_digest() {
    const uint64_t bits = length_ * 8;
    unsigned char pad = 0x80;
    update(&pad, 1);
    unsigned char zero = 0;
    while (used_ != 56) update(&zero, 1);
    for (int i = 7; i >= 0; --i) {
      unsigned char b = static_cast<unsigned char>(bits >> (8 * i));
      update(&b, 1);
    }
    std::string out;
    for (uint32_t h : state_) out += fmt::format("{:08x}", h);
    return out;
  }

 private:
  void compress() {
    std::array<uint32_t, 64> w{};
    for (size_t i = 0; i < 16; ++i)
      w[i] = uint32_t{block_[4 * i]} << 24 | uint32_t{block_[4 * i + 1]} << 16 | uint32_t{block_[4 * i + 2]} << 8 |
             uint32_t{block_[4 * i + 3]};
    for (size_t i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, h] = state_;
    for (size_t i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    const std::array<uint32_t, 8> add{a, b, c, d, e, f, g, h};
    for (size_t i = 0; i < 8; ++i) state_[i] += add[i];
  }

  std::array<uint32_t, 8> state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  size_t used_ = 0;
  uint64_t length_ = 0;
};

}  // namespace

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return h.hex_digest();
}

std::string file_sha256(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::kUnreadable, "cannot read the file to hash it", file.string());
  Sha256 h;
  std::array<char, 1 << 16> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    h.update(reinterpret_cast<const unsigned char*>(buf.data()), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(ErrorKind::kUnreadable, "I/O error while hashing the file", file.string());
  return h.hex_digest();
}

}  // namespace magpie
