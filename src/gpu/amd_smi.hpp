#pragma once
// The machine's AMD GPUs as `amd-smi static --json` and `amd-smi metric
// --json` report them (rocminfo's architecture when amd-smi is absent), in the
// same typed SystemStatus that query_nvml fills for NVIDIA.
#include <string>
#include <string_view>

#include "gpu/nvml.hpp"

namespace magpie::gpu {

// Both outputs as amd-smi prints them: a list of per-GPU objects, or (ROCm 7)
// {"gpu_data": [...]}. Values may be numbers, {"value": N, "unit": "MB"} or
// "N/A". metric_json may be empty (static fields only). Malformed JSON is a
// note, never an exception.
SystemStatus parse_amd_smi(std::string_view static_json, std::string_view metric_json);

// The first "gfx..." agent name in `rocminfo` output ("gfx942"); "" if none.
std::string parse_rocminfo_arch(std::string_view rocminfo_text);

// Runs amd-smi (then rocminfo) from PATH or /opt/rocm/bin when present. No
// tool or no GPU: no devices and a note that says which tool was missing.
SystemStatus query_amd_gpus();

}  // namespace magpie::gpu
