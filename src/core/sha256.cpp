#include "core/sha256.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>

#include "core/error.hpp"

// OpenSSL's SHA-256 (libcrypto: the HTTP and Ray clients link it already).
namespace magpie {

namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext start() {
  DigestContext ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error(ErrorKind::kInternal, "OpenSSL could not start a SHA-256 digest");
  return ctx;
}

void update(EVP_MD_CTX* ctx, const void* data, size_t n) {
  if (EVP_DigestUpdate(ctx, data, n) != 1) throw Error(ErrorKind::kInternal, "OpenSSL SHA-256 update failed");
}

std::string finish_hex(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, md.data(), &len) != 1)
    throw Error(ErrorKind::kInternal, "OpenSSL SHA-256 finish failed");
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  auto ctx = start();
  update(ctx.get(), data.data(), data.size());
  return finish_hex(ctx.get());
}

std::string file_sha256(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::kUnreadable, "cannot read the file to hash it", file.string());
  auto ctx = start();
  std::array<char, 1 << 16> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    update(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(ErrorKind::kUnreadable, "I/O error while hashing the file", file.string());
  return finish_hex(ctx.get());
}

}  // namespace magpie
