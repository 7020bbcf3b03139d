#pragma once
// `gpu_selection:` — which GPUs the engine may use. The choice is made from
// what the driver reports (src/gpu), checked (a GPU that does not exist is an
// error naming what exists), and handed to the engine as
// CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace magpie::serve {

struct GpuSelectionConfig {
  bool auto_select = true;        // auto: pick the GPUs with the most free memory
  double min_free_memory_gb = 8;  // auto: skip GPUs with less free than this
  std::optional<int64_t> count;   // how many; default: the TP env (else 1)
  std::vector<int> candidates;    // allowed indices; empty = every GPU
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
  std::string env_name;            // CUDA_VISIBLE_DEVICES | HIP_VISIBLE_DEVICES
  std::string env_value;           // "2,3"
  std::string reason;              // how the choice was made, for the report
};

// Pure. Throws Error(kUsage) naming the key and what exists when the request
// cannot be met: unknown indices, too few GPUs (free enough, not busy), no GPU at all.
GpuSelection select_gpus(const GpuSelectionConfig& config, const GpuInventory& inventory,
                         int64_t default_count);

// The machine's GPUs through NVML (dlopen'd; no driver = empty with a reason).
GpuInventory query_gpu_inventory();

// The lock key of a GPU: its UUID, else its index.
std::string gpu_lock_key(const GpuInventoryEntry& gpu);

}  // namespace magpie::serve
