#include "core/text_head.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "core/error.hpp"

namespace magpie {

std::string read_text_head(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error(ErrorKind::kNotFound, "file does not exist", path.string());
  }
  // gzread reads plain files as they are and inflates gzip ones.
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw Error(ErrorKind::kUnreadable, std::string("cannot open: ") + std::strerror(errno),
                path.string(), std::nullopt, "check the file's permissions");
  }
  std::string out(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    const int n = gzread(f, out.data() + got, static_cast<unsigned>(max_bytes - got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  gzclose(f);
  out.resize(got);
  return out;
}

}  // namespace magpie
