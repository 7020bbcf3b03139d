#pragma once
// rocprofv3 `--kernel-trace` CSV → KernelRecords, so AMD runs feed the same
// aggregates and busy-time union as our CUPTI library on NVIDIA.
#include <string>
#include <string_view>
#include <vector>

#include "profiler/kernel_record.hpp"

namespace magpie::profiler {

// Columns are found by header name (Kernel_Name, Start_Timestamp,
// End_Timestamp required). Throws Error(kBadFormat) naming `origin` and the line.
std::vector<KernelRecord> parse_rocprof_kernel_trace(std::string_view csv, const std::string& origin);

}  // namespace magpie::profiler
