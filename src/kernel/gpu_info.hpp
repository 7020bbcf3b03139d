#pragma once
// What the build and the roofline floor need to know about the local GPU:
// its architecture flag for nvcc/hipcc and its peaks, from Magpie's datasheet
// (gpu::datasheet) or, for a GPU it does not know, from the driver.
#include <cstdint>
#include <optional>
#include <string>

#include "core/child_process.hpp"

namespace magpie::kernel {

struct GpuInfo {
  std::string vendor;        // "NVIDIA", "AMD", "" when none found
  std::string name;          // e.g. "NVIDIA H200"
  std::string arch;          // "sm_90", "gfx942", "" when unknown
  double peak_tbps = 0;      // memory bandwidth, TB/s
  double peak_tflops = 0;    // dense bf16/fp16 matrix TFLOP/s
  int64_t memory_bytes = 0;  // as the driver reports it; 0 = unknown (tells 40/80 GB boards apart)
  // Where the peaks come from: "datasheet entry H200 (...)", "driver-reported
  // ... (not in the datasheet)", or why there are none.
  std::string peaks_source;
  bool found() const { return !vendor.empty(); }
};

// "9.0" → "sm_90"; nullopt for anything else.
std::optional<std::string> sm_arch_from_compute_cap(const std::string& cap);

// Peaks from gpu::datasheet() by name (and memory), else by architecture
// ("gfx942" → MI300X). Unknown: peaks stay as they are (0, or the driver's
// bandwidth detect_gpu put there) and peaks_source says so.
void fill_peaks(GpuInfo& info);

// NVML (the driver), then amd-smi, then rocminfo. MAGPIE_GPU_ARCH overrides
// the architecture (for builds on a machine without the GPU). `index`: the
// driver's index of the GPU the run uses (gpu_selection); default the first.
GpuInfo detect_gpu(std::optional<int> index = std::nullopt);

using magpie::find_on_path;  // core/child_process.hpp

}  // namespace magpie::kernel
