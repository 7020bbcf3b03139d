#pragma once
// `magpie --gpu-info`: what the machine offers for Magpie's work (vendor,
// architecture, compiler, profilers) and what each GPU reports, as text or JSON.
// The writers only format; the caller gathers (query_nvml and a toolchain probe).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml.hpp"

namespace magpie::gpu {

struct ToolStatus {
  std::string name;     // "nvcc", "ncu", "libmagpie_cupti"
  std::string path;     // absolute path
  std::string version;  // one line from `--version`; "" when not asked or not given
};

struct GpuInfoReport {
  SystemStatus system;
  std::string architecture;            // "sm_90", "gfx942"; "" when unknown
  std::optional<ToolStatus> compiler;  // nvcc or hipcc; nullopt when neither is found
  std::vector<ToolStatus> profilers;   // the ones found, in a fixed order
};

// "sm_90" from compute capability 9.0; "" when the capability is unknown.
std::string architecture_of(const DeviceStatus& device);

// Magpie's block (`GPU Information:`, `Vendor:`, `Architecture:`, `Compiler:`,
// `Profiler:`), then one block per device, or `(No GPU detected)` and the notes.
std::string render_gpu_info_text(const GpuInfoReport& report);

// One object; keys in docs/GPU_INFO.md. Unknown values are null.
nlohmann::json gpu_info_json(const GpuInfoReport& report);

}  // namespace magpie::gpu
