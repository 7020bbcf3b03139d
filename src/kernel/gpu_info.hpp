#pragma once
// What the build and the roofline floor need to know about the local GPU:
// its architecture flag for nvcc/hipcc and its datasheet peaks.
#include <optional>
#include <string>

namespace magpie::kernel {

struct GpuInfo {
  std::string vendor;        // "NVIDIA", "AMD", "" when none found
  std::string name;          // e.g. "NVIDIA H200"
  std::string arch;          // "sm_90", "gfx942", "" when unknown
  double peak_tbps = 0;      // memory bandwidth, TB/s (datasheet)
  double peak_tflops = 0;    // dense bf16/fp16 matrix TFLOP/s (datasheet)
  bool found() const { return !vendor.empty(); }
};

// "9.0" → "sm_90"; nullopt for anything else.
std::optional<std::string> sm_arch_from_compute_cap(const std::string& cap);

// Datasheet peaks by marketing name (docs/REFERENCE_FACTS.md §4); zeros when unknown.
void fill_peaks(GpuInfo& info);

// Asks nvidia-smi (--query-gpu=name,compute_cap), then rocminfo. MAGPIE_GPU_ARCH
// overrides the architecture (for builds on a machine without the GPU).
GpuInfo detect_gpu();

// Absolute path of an executable on PATH, or "" (e.g. find_on_path("hipcc")).
std::string find_on_path(const std::string& name);

}  // namespace magpie::kernel
