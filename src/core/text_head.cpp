#include "core/text_head.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "core/error.hpp"
#include "core/gzip.hpp"

namespace magpie {

std::string read_text_head(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error(ErrorKind::kNotFound, "file does not exist", path.string());
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw Error(ErrorKind::kUnreadable, std::string("cannot open: ") + std::strerror(errno),
                path.string(), std::nullopt, "check the file's permissions");
  }
  constexpr size_t kReadBytes = size_t{64} << 10;
  std::string chunk(kReadBytes, '\0');
  auto read_some = [&]() -> std::string_view {
    f.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    return std::string_view(chunk.data(), static_cast<size_t>(f.gcount()));
  };
  std::string_view in = read_some();
  std::string out;
  if (!is_gzip(in)) {
    // Plain text: as it is.
    out.assign(in.substr(0, max_bytes));
    while (out.size() < max_bytes && f) out.append(read_some().substr(0, max_bytes - out.size()));
    return out;
  }
  out.resize(max_bytes);
  size_t got = 0;
  GzipInflater inflater;
  while (got < max_bytes) {
    if (in.empty()) {
      in = read_some();
      if (in.empty()) break;  // end of file (a cut stream gives what inflated)
    }
    const GzipInflater::Step s = inflater.inflate(in, out.data() + got, max_bytes - got);
    got += s.produced;
    if (s.rc < 0) break;  // damage: what inflated before it (the full load reports it)
    if (s.consumed == 0 && s.produced == 0 && !s.member_done) break;
  }
  out.resize(got);
  return out;
}

}  // namespace magpie
