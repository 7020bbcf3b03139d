#pragma once
// One lock file per GPU, so two magpie runs on one host never hand the same
// GPU to their engines. flock(2) on <dir>/magpie-gpu-<uuid or index>.lock: the
// kernel drops it when the holder exits or crashes, so no lock outlives its run.
#include <filesystem>
#include <string>
#include <vector>

namespace magpie::gpu {

class GpuLocks {
 public:
  // `dir`: where the lock files live ($MAGPIE_GPU_LOCK_DIR, else /tmp).
  explicit GpuLocks(std::filesystem::path dir = default_dir());
  ~GpuLocks();
  GpuLocks(const GpuLocks&) = delete;
  GpuLocks& operator=(const GpuLocks&) = delete;
  GpuLocks(GpuLocks&& other) noexcept;
  GpuLocks& operator=(GpuLocks&& other) noexcept;

  // Takes the GPU's lock without waiting; false when another run holds it.
  // Throws Error(kUnreadable) when the lock file cannot be opened.
  bool try_lock(const std::string& gpu_key);
  void release_all();
  size_t held() const { return fds_.size(); }
  std::filesystem::path path_for(const std::string& gpu_key) const;

  static std::filesystem::path default_dir();

 private:
  std::filesystem::path dir_;
  std::vector<int> fds_;
};

}  // namespace magpie::gpu
