#include "gpu/gpu_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace magpie::gpu {

GpuLocks::GpuLocks(std::filesystem::path dir) : dir_(std::move(dir)) {}

GpuLocks::~GpuLocks() { release_all(); }

GpuLocks::GpuLocks(GpuLocks&& other) noexcept
    : dir_(std::move(other.dir_)), fds_(std::move(other.fds_)) {
  other.fds_.clear();
}

GpuLocks& GpuLocks::operator=(GpuLocks&& other) noexcept {
  if (this != &other) {
    release_all();
    dir_ = std::move(other.dir_);
    fds_ = std::move(other.fds_);
    other.fds_.clear();
  }
  return *this;
}

std::filesystem::path GpuLocks::default_dir() {
  const char* dir = std::getenv("MAGPIE_GPU_LOCK_DIR");
  return dir != nullptr && *dir != '\0' ? std::filesystem::path(dir)
                                        : std::filesystem::path("/tmp");
}

std::filesystem::path GpuLocks::path_for(const std::string& gpu_key) const {
  std::string safe;
  for (char ch : gpu_key)
    safe.push_back(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_');
  return dir_ / fmt::format("magpie-gpu-{}.lock", safe);
}

bool GpuLocks::try_lock(const std::string& gpu_key) {
  const auto path = path_for(gpu_key);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error(ErrorKind::kUnreadable,
                fmt::format("cannot open the GPU lock {}: {}", path.string(), std::strerror(errno)),
                "", std::nullopt, "set MAGPIE_GPU_LOCK_DIR to a writable folder");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  // Who holds it, for a person looking at the file.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::write(fd, pid.data(), pid.size());
  fds_.push_back(fd);
  return true;
}

void GpuLocks::release_all() {
  for (int fd : fds_) ::close(fd);  // closing drops the flock
  fds_.clear();
}

}  // namespace magpie::gpu
