#pragma once
// Power limit and locked clocks for NVIDIA GPUs through nvidia-smi (-pl,
// -lgc, -lmc; -rgc, -rmc to reset), applied all or nothing: when one change
// fails, the ones already made are undone in reverse order.
#include <optional>
#include <string>
#include <vector>

namespace magpie::kernel {

struct GpuSettingsRequest {
  std::vector<int> device_ids;  // empty: every GPU nvidia-smi lists
  std::optional<double> power_limit_watts;
  std::optional<int> gpu_clock_mhz;  // locks graphics clocks to this value
  std::optional<int> mem_clock_mhz;  // locks memory clocks to this value
  bool reset = false;                // unlock clocks, restore the default power limit
};

struct GpuSettingStep {
  int device = 0;
  std::string setting;  // "power_limit_watts", "gpu_clock_mhz", "mem_clock_mhz", "reset_*"
  std::string command;  // as run
  bool ok = false;
  std::string output;  // nvidia-smi's message (tail)
  bool rolled_back = false;
};

struct GpuSettingsOutcome {
  bool applied = false;      // every step succeeded
  bool rolled_back = false;  // a step failed and the earlier ones were undone
  std::vector<int> devices;
  std::vector<GpuSettingStep> steps;
  std::string error;  // what failed and what to do, when !applied
};

// Throws magpie::Error(kNotFound) when nvidia-smi is not on PATH (no NVIDIA
// GPU here), kUsage when nothing is asked for. A failing nvidia-smi call is
// not thrown: the outcome says which step failed and what was rolled back.
GpuSettingsOutcome configure_gpus(const GpuSettingsRequest& request);

}  // namespace magpie::kernel
