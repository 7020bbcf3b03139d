#pragma once
// JSON writers for the datasheet: one entry with every figure's source, and
// the datasheet block `--gpu-info` and MCP hardware_spec attach to a device.
#include <nlohmann/json.hpp>

#include "gpu/datasheet.hpp"
#include "gpu/nvml.hpp"

namespace magpie::gpu {

// {"name", "vendor", "arch", ..., "memory_bandwidth_tbps": {"value", "source"},
//  "peaks": [{"precision", "unit", "tflops", "source"}], "note"}. Unknown figures are null.
nlohmann::json spec_json(const GpuSpec& spec);

// For one device: {"entry": spec_json | null, "match": why, "figures_from":
// "datasheet" | "driver", "memory_bandwidth_tbps", "peak_bf16_tflops"}. A GPU
// the datasheet lacks gets the driver's bandwidth (max memory clock x bus
// width) and null compute peaks, and "figures_from": "driver" says so.
nlohmann::json device_datasheet_json(const DeviceStatus& device);

}  // namespace magpie::gpu
