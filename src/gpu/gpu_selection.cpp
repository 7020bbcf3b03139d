#include "gpu/gpu_selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "gpu/nvml.hpp"

namespace magpie::gpu {

namespace {

Error selection_error(const std::string& what, const std::string& hint) {
  return Error(ErrorKind::kUsage, "gpu_selection: " + what, "", std::nullopt, hint);
}

std::string describe(const GpuInventory& inv) {
  std::vector<std::string> parts;
  for (const auto& g : inv.gpus)
    parts.push_back(fmt::format("{} ({}, {:.1f} of {:.1f} GB free{})", g.index, g.name,
                                g.memory_free_gb, g.memory_total_gb,
                                g.busy ? ", in use by another magpie run" : ""));
  return fmt::format("{} GPU(s): {}", inv.gpus.size(), fmt::join(parts, "; "));
}

}  // namespace

GpuSelection select_gpus(const GpuSelectionConfig& config, const GpuInventory& inventory,
                         int64_t default_count) {
  if (inventory.gpus.empty())
    throw selection_error(
        fmt::format("no GPU found ({})",
                    inventory.why_empty.empty() ? "the driver reports none" : inventory.why_empty),
        "remove gpu_selection for a CPU engine, or benchmark a running server with --endpoint");
  const int64_t count = config.count.value_or(default_count);
  if (count < 1)
    throw selection_error(fmt::format("count {} must be at least 1", count),
                          "set gpu_selection.count: 1 or more");
  std::vector<GpuInventoryEntry> pool;
  if (config.candidates.empty()) {
    pool = inventory.gpus;
  } else {
    for (int want : config.candidates) {
      auto it = std::find_if(inventory.gpus.begin(), inventory.gpus.end(),
                             [&](const GpuInventoryEntry& g) { return g.index == want; });
      if (it == inventory.gpus.end())
        throw selection_error(
            fmt::format("candidate GPU {} does not exist; this machine has {}", want,
                        describe(inventory)),
            "list indices that exist in gpu_selection.candidates (see magpie --gpu-info)");
      if (std::none_of(pool.begin(), pool.end(), [&](const auto& g) { return g.index == want; }))
        pool.push_back(*it);
    }
  }
  // GPUs another magpie run holds are never handed out.
  const size_t busy = std::erase_if(pool, [](const GpuInventoryEntry& g) { return g.busy; });
  GpuSelection out;
  out.env_name = inventory.vendor == "AMD" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
  std::string from = config.candidates.empty() ? "all GPUs" : "the candidates";
  if (busy > 0) from += fmt::format(" not in use by another magpie run ({} are)", busy);
  if (config.auto_select) {
    std::vector<GpuInventoryEntry> fit;
    for (const auto& g : pool)
      if (g.memory_free_gb >= config.min_free_memory_gb) fit.push_back(g);
    // Most free memory first; the lower index on a tie (stable).
    std::stable_sort(fit.begin(), fit.end(), [](const auto& a, const auto& b) {
      return a.memory_free_gb > b.memory_free_gb;
    });
    if (static_cast<int64_t>(fit.size()) < count)
      throw selection_error(
          fmt::format(
              "{} GPU(s) wanted with at least {:g} GB free, {} of {} qualify; this machine has {}",
              count, config.min_free_memory_gb, fit.size(), from, describe(inventory)),
          "lower gpu_selection.min_free_memory_gb or count, or free a GPU");
    fit.resize(static_cast<size_t>(count));
    for (const auto& g : fit)
      out.indices.push_back(g.index), out.names.push_back(g.name), out.uuids.push_back(g.uuid);
    out.reason = fmt::format("auto: the {} of {} with the most free memory (at least {:g} GB free)",
                             count, from, config.min_free_memory_gb);
  } else {
    if (static_cast<int64_t>(pool.size()) < count)
      throw selection_error(fmt::format("{} GPU(s) wanted, {} has {}; this machine has {}", count,
                                        from, pool.size(), describe(inventory)),
                            "lower gpu_selection.count or list more candidates");
    for (int64_t i = 0; i < count; ++i) {
      out.indices.push_back(pool[static_cast<size_t>(i)].index);
      out.names.push_back(pool[static_cast<size_t>(i)].name);
      out.uuids.push_back(pool[static_cast<size_t>(i)].uuid);
    }
    out.reason = fmt::format("auto off: the first {} of {} in order", count, from);
  }
  out.env_value = fmt::format("{}", fmt::join(out.indices, ","));
  return out;
}

GpuInventory query_gpu_inventory() {
  GpuInventory inv;
  constexpr double kGiB =
      1024.0 * 1024.0 * 1024.0;  // min_free_memory_gb is read as GiB, as nvidia-smi counts
  // Only the device list is needed: skip the CUDA driver (SM counts).
  auto status = query_nvml({"libnvidia-ml.so.1", ""});
  inv.vendor = status.vendor;
  for (const auto& d : status.devices) {
    GpuInventoryEntry e;
    e.index = d.index;
    e.name = d.name;
    e.uuid = d.uuid;
    e.memory_free_gb = static_cast<double>(d.memory_free) / kGiB;
    e.memory_total_gb = static_cast<double>(d.memory_total) / kGiB;
    inv.gpus.push_back(e);
  }
  if (inv.gpus.empty()) inv.why_empty = status.notes.empty() ? "no GPU" : status.notes.front();
  return inv;
}

std::string gpu_lock_key(const GpuInventoryEntry& gpu) {
  return gpu.uuid.empty() ? fmt::format("index{}", gpu.index) : gpu.uuid;
}

LockedGpus select_and_lock(const GpuSelectionConfig& config,
                           const std::function<GpuInventory()>& inventory, int64_t default_count,
                           const std::filesystem::path& lock_dir, const std::atomic<bool>* cancel) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(0.0, config.wait_s)));
  LockedGpus out{{}, GpuLocks(lock_dir), 0};
  while (true) {
    GpuInventory inv = inventory();
    bool others_hold = false;
    try {
      while (true) {
        out.selection = select_gpus(config, inv, default_count);  // throws when too few are left
        bool all = true;
        for (int index : out.selection.indices) {
          auto& gpu = *std::find_if(inv.gpus.begin(), inv.gpus.end(),
                                    [&](const GpuInventoryEntry& g) { return g.index == index; });
          if (!out.locks.try_lock(gpu_lock_key(gpu))) {
            gpu.busy = true;
            all = false;
            others_hold = true;
          }
        }
        if (all) break;
        out.locks.release_all();
      }
    } catch (const Error&) {
      // Only a shortage other runs cause is worth waiting for.
      if (!others_hold || Clock::now() >= deadline) throw;
      if (cancel != nullptr && cancel->load())
        throw Error(ErrorKind::kCancelled, "gpu_selection: cancelled while waiting for a GPU");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    break;
  }
  out.waited_s = std::chrono::duration<double>(Clock::now() - start).count();
  out.selection.reason += fmt::format("; locked in {} for the run", lock_dir.string());
  if (out.waited_s >= 0.5)
    out.selection.reason +=
        fmt::format(" (waited {:.1f} s for GPUs other magpie runs held)", out.waited_s);
  return out;
}

}  // namespace magpie::gpu
