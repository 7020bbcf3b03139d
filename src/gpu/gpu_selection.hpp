#pragma once
// `gpu_selection:` — which GPUs the engine may use. The choice is made from
// what the driver reports (src/gpu), checked (a GPU that does not exist is an
// error naming what exists), and handed to the engine as
// CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_lock.hpp"

namespace magpie::gpu {

struct GpuSelectionConfig {
  bool auto_select = true;        // auto: pick the GPUs with the most free memory
  double min_free_memory_gb = 8;  // auto: skip GPUs with less free than this
  std::optional<int64_t> count;   // how many; default: the TP env (else 1)
  std::vector<int> candidates;    // allowed indices; empty = every GPU
  // Ours (kernel runs): how long to wait for GPUs other magpie runs hold
  // before giving up; 0 = fail at once, as the serving benchmark does.
  double wait_s = 0;
};

// One GPU as the driver reports it.
struct GpuInventoryEntry {
  int index = 0;
  std::string name;
  std::string uuid;  // "" when the driver gave none
  double memory_free_gb = 0, memory_total_gb = 0;
  bool busy = false;  // another magpie run holds its lock (gpu_lock.hpp): never chosen
};

struct GpuInventory {
  std::string vendor;  // NVIDIA | AMD | "" (none found)
  std::vector<GpuInventoryEntry> gpus;
  std::string why_empty;  // the driver's note when gpus is empty
};

struct GpuSelection {
  std::vector<int> indices;
  std::vector<std::string> names;  // the driver's name of each chosen GPU
  std::vector<std::string> uuids;  // and its UUID ("" when the driver gave none)
  std::string env_name;            // CUDA_VISIBLE_DEVICES | HIP_VISIBLE_DEVICES
  std::string env_value;           // "2,3"
  std::string reason;              // how the choice was made, for the report
};

// Pure. Throws Error(kUsage) naming the key and what exists when the request
// cannot be met: unknown indices, too few GPUs (free enough, not busy), no GPU at all.
GpuSelection select_gpus(const GpuSelectionConfig& config, const GpuInventory& inventory,
                         int64_t default_count);

// What a run's report says about gpu_selection: what was asked, what was
// chosen, or why nothing was (no GPU on this machine: the run carried on).
struct GpuSelectionRecord {
  GpuSelectionConfig requested;
  std::optional<GpuSelection> chosen;
  std::string not_applied;  // why chosen is empty
};

// The machine's GPUs through NVML (dlopen'd; no driver = empty with a reason).
GpuInventory query_gpu_inventory();

// The lock key of a GPU: its UUID, else its index.
std::string gpu_lock_key(const GpuInventoryEntry& gpu);

// A choice and the locks that keep it ours, held until this is destroyed.
struct LockedGpus {
  GpuSelection selection;
  GpuLocks locks;
  double waited_s = 0;  // time spent waiting for other runs' GPUs
};

// Picks the GPUs and takes their locks (in `lock_dir`): a GPU another magpie
// run holds is marked busy and the choice made again without it. When too few
// are left because other runs hold them, waits up to config.wait_s, reading
// `inventory` again every half second; then throws as select_gpus does.
// `cancel` set → stops waiting (Error kCancelled).
LockedGpus select_and_lock(const GpuSelectionConfig& config,
                           const std::function<GpuInventory()>& inventory, int64_t default_count,
                           const std::filesystem::path& lock_dir = GpuLocks::default_dir(),
                           const std::atomic<bool>* cancel = nullptr);

}  // namespace magpie::gpu
