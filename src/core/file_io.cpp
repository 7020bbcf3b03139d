#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "core/gzip.hpp"

namespace magpie {

PaddedBuffer::PaddedBuffer(size_t size)
    : data_(new char[size + kPadding]), size_(size) {
  std::memset(data_.get() + size, 0, kPadding);
}

void PaddedBuffer::shrink(size_t new_size) {
  if (new_size > size_) throw Error(ErrorKind::kInternal, "PaddedBuffer::shrink grows");
  size_ = new_size;
  std::memset(data_.get() + size_, 0, kPadding);
}

PaddedBuffer read_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    ErrorKind kind = (err == ENOENT) ? ErrorKind::kNotFound : ErrorKind::kUnreadable;
    throw Error(kind, std::string("cannot open: ") + std::strerror(err), path.string(),
                std::nullopt,
                err == EACCES ? "check the file's permissions (chmod +r)" : std::string{});
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kUnreadable, "not a regular file", path.string());
  }
  PaddedBuffer buf(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::read(fd, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      throw Error(ErrorKind::kUnreadable,
                  n == 0 ? "file shrank while reading" : std::string("read failed: ") +
                                                             std::strerror(err),
                  path.string(), done);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return buf;
}

PaddedBuffer read_maybe_gzip(const std::filesystem::path& path) {
  PaddedBuffer raw = read_file(path);
  if (!is_gzip(raw.view())) return raw;
  return gunzip(raw.view(), path.string());
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  auto tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::kUnreadable, "cannot create file for writing", tmp.string());
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) throw Error(ErrorKind::kUnreadable, "write failed (disk full?)", tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(ErrorKind::kUnreadable, "cannot move report into place: " + ec.message(),
                path.string());
  }
}

}  // namespace magpie
