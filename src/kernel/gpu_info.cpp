#include "kernel/gpu_info.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "gpu/amd_smi.hpp"
#include "gpu/datasheet.hpp"
#include "gpu/gpu_info_report.hpp"
#include "gpu/nvml.hpp"

namespace magpie::kernel {

std::optional<std::string> sm_arch_from_compute_cap(const std::string& cap) {
  auto dot = cap.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= cap.size()) return std::nullopt;
  std::string major = cap.substr(0, dot), minor = cap.substr(dot + 1);
  for (char c : major + minor) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return "sm_" + major + minor;
}

void fill_peaks(GpuInfo& info) {
  auto match = gpu::find_spec_for_device(info.name, info.memory_bytes);
  const gpu::GpuSpec* spec = match.spec;
  std::string why = match.reason;
  if (spec == nullptr && !info.arch.empty()) {
    // rocminfo names only the architecture; gfx942 alone names MI300X.
    spec = gpu::find_spec(info.arch);
    if (spec != nullptr) why = fmt::format("architecture {} names {}", info.arch, spec->name);
  }
  if (spec == nullptr) {
    info.peaks_source =
        info.peak_tbps > 0
            ? fmt::format("driver-reported memory bandwidth, no compute peak ({})", why)
            : fmt::format("no peaks: {}", why);
    return;
  }
  // MI250X: the driver's device is one GCD, half the package the datasheet describes.
  const double per = 1.0 / spec->devices_per_package;
  info.peak_tbps = spec->memory_bandwidth_tbps.value * per;
  auto bf16 = spec->peak(gpu::Precision::kBf16, gpu::ExecUnit::kMatrix);
  if (!bf16) bf16 = spec->peak(gpu::Precision::kFp16, gpu::ExecUnit::kMatrix);
  info.peak_tflops = bf16 ? bf16->value * per : 0;
  info.peaks_source = fmt::format("datasheet entry {} ({}; {})", spec->name,
                                  spec->memory_bandwidth_tbps.source, why);
}

GpuInfo detect_gpu(std::optional<int> index) {
  GpuInfo info;
  auto pick = [&index](const std::vector<gpu::DeviceStatus>& devices) -> const gpu::DeviceStatus& {
    if (index)
      for (const auto& d : devices)
        if (d.index == *index) return d;
    return devices.front();
  };
  gpu::SystemStatus nvml = gpu::query_nvml();
  if (!nvml.devices.empty()) {
    const auto& d = pick(nvml.devices);
    info.vendor = "NVIDIA";
    info.name = d.name;
    info.arch = gpu::architecture_of(d);
    info.memory_bytes = static_cast<int64_t>(d.memory_total);
    info.peak_tbps = gpu::driver_memory_bandwidth_tbps(d);
  } else {
    gpu::SystemStatus amd = gpu::query_amd_gpus();
    if (!amd.devices.empty()) {
      const auto& d = pick(amd.devices);
      info.vendor = "AMD";
      info.name = d.name;
      info.arch = d.arch;
      info.memory_bytes = static_cast<int64_t>(d.memory_total);
    }
  }
  if (const char* forced = std::getenv("MAGPIE_GPU_ARCH"); forced != nullptr && *forced != '\0')
    info.arch = forced;
  fill_peaks(info);
  return info;
}

}  // namespace magpie::kernel
