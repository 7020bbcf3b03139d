#pragma once
// The report blocks for gpu_selection and gpu_monitor as the kernel reports
// (analyze_report.json, compare_report.json) write them; same shape as the
// serving report's `config.gpu_selection`, plus the record of a selection that
// could not be applied. monitor_summary_json is the one writer of the
// `gpu_monitor` block, throttle findings included, for kernel and serving
// reports alike.
#include <nlohmann/json.hpp>

#include "gpu/gpu_monitor.hpp"
#include "gpu/gpu_selection.hpp"

namespace magpie::gpu {

nlohmann::json gpu_selection_json(const GpuSelectionRecord& record);
nlohmann::json monitor_summary_json(const GpuMonitorSummary& summary);

}  // namespace magpie::gpu
