#include "gpu/nvml_sampler.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>

namespace magpie::gpu {

namespace {
// NVML's ABI (nvml.h): return codes and enums are ints, a device an opaque
// pointer. Declared here so the sampler needs neither nvml.h nor the
// declarations query_nvml uses.
using Device = void*;
constexpr int kSuccess = 0;
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kTemperatureGpu = 0;
struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
struct MemoryV2 {  // v2 keeps the driver's reservation out of `used`, as nvidia-smi shows it
  unsigned version;
  unsigned long long total, reserved, free, used;
};
constexpr unsigned kMemoryV2 = static_cast<unsigned>(sizeof(MemoryV2)) | (2U << 24);
}  // namespace

struct NvmlSampler::Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Device*) = nullptr;
  int (*name)(Device, char*, unsigned) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*memory_v2)(Device, MemoryV2*) = nullptr;
  int (*power)(Device, unsigned*) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*temperature)(Device, int, unsigned*) = nullptr;
  int (*clocks_event_reasons)(Device, unsigned long long*) = nullptr;

  std::string error(int code) const {
    const char* text = error_string != nullptr ? error_string(code) : nullptr;
    return text != nullptr ? fmt::format("{} (NVML error {})", text, code)
                           : fmt::format("NVML error {}", code);
  }
};

std::vector<std::string> clocks_event_reason_names(uint64_t mask) {
  // nvml.h's nvmlClocksEventReason* bits.
  static const std::pair<uint64_t, const char*> kNames[] = {{0x1, "gpu_idle"},
                                                            {0x2, "applications_clocks_setting"},
                                                            {0x4, "sw_power_cap"},
                                                            {0x8, "hw_slowdown"},
                                                            {0x10, "sync_boost"},
                                                            {0x20, "sw_thermal_slowdown"},
                                                            {0x40, "hw_thermal_slowdown"},
                                                            {0x80, "hw_power_brake_slowdown"},
                                                            {0x100, "display_clock_setting"}};
  std::vector<std::string> out;
  for (auto [bit, name] : kNames)
    if ((mask & bit) != 0) out.emplace_back(name), mask &= ~bit;
  for (int b = 0; b < 64; ++b)
    if ((mask & (uint64_t{1} << b)) != 0) out.push_back(fmt::format("bit_{}", b));
  return out;
}

NvmlSampler::NvmlSampler(std::vector<int> indices, const NvmlLibraries& libraries) {
  library_ = ::dlopen(libraries.nvml.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = ::dlerror();
    reason_ = fmt::format("NVML not found ({}): no NVIDIA driver ({})", libraries.nvml,
                          why != nullptr ? why : "dlopen failed");
    return;
  }
  api_ = new Api;
  auto resolve = [this](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library_, symbol));
  };
  resolve(api_->init, "nvmlInit_v2");
  resolve(api_->shutdown, "nvmlShutdown");
  resolve(api_->error_string, "nvmlErrorString");
  resolve(api_->count, "nvmlDeviceGetCount_v2");
  resolve(api_->handle, "nvmlDeviceGetHandleByIndex_v2");
  resolve(api_->name, "nvmlDeviceGetName");
  resolve(api_->utilization, "nvmlDeviceGetUtilizationRates");
  resolve(api_->memory, "nvmlDeviceGetMemoryInfo");
  resolve(api_->memory_v2, "nvmlDeviceGetMemoryInfo_v2");
  resolve(api_->power, "nvmlDeviceGetPowerUsage");
  resolve(api_->clock, "nvmlDeviceGetClockInfo");
  resolve(api_->temperature, "nvmlDeviceGetTemperature");
  // The "event" name since driver 535; older drivers only have the "throttle" one (same ABI).
  resolve(api_->clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (api_->clocks_event_reasons == nullptr)
    resolve(api_->clocks_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (api_->init == nullptr || api_->count == nullptr || api_->handle == nullptr) {
    reason_ = fmt::format(
        "{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2", libraries.nvml);
    return;
  }
  if (int rc = api_->init(); rc != kSuccess) {
    reason_ = fmt::format("NVML could not start: {}", api_->error(rc));
    api_->shutdown = nullptr;  // nothing to shut down
    return;
  }
  unsigned count = 0;
  if (int rc = api_->count(&count); rc != kSuccess) {
    reason_ = fmt::format("NVML device count: {}", api_->error(rc));
    return;
  }
  if (indices.empty())
    for (unsigned i = 0; i < count; ++i) indices.push_back(static_cast<int>(i));
  for (int i : indices) {
    Device d = nullptr;
    if (i < 0 || static_cast<unsigned>(i) >= count) {
      notes_.push_back(fmt::format("GPU {}: not present (NVML reports {} GPUs)", i, count));
      continue;
    }
    if (int rc = api_->handle(static_cast<unsigned>(i), &d); rc != kSuccess) {
      notes_.push_back(fmt::format("GPU {}: skipped: {}", i, api_->error(rc)));
      continue;
    }
    std::array<char, 96> text{};
    std::string name;
    if (api_->name != nullptr &&
        api_->name(d, text.data(), static_cast<unsigned>(text.size())) == kSuccess)
      name = text.data();
    handles_.emplace_back(i, d);
    names_.emplace_back(i, name);
  }
  if (handles_.empty()) {
    reason_ = "NVML is loaded but reports no GPU to sample";
    return;
  }
  for (auto [fn, what] :
       {std::pair{api_->utilization != nullptr, "utilization_pct (nvmlDeviceGetUtilizationRates)"},
        {api_->memory != nullptr || api_->memory_v2 != nullptr,
         "memory_used_mib (nvmlDeviceGetMemoryInfo)"},
        {api_->power != nullptr, "power_w (nvmlDeviceGetPowerUsage)"},
        {api_->clock != nullptr, "sm_clock_mhz (nvmlDeviceGetClockInfo)"},
        {api_->temperature != nullptr, "temperature_c (nvmlDeviceGetTemperature)"},
        {api_->clocks_event_reasons != nullptr,
         "clocks_event_reasons (nvmlDeviceGetCurrentClocksEventReasons)"}})
    if (!fn) notes_.push_back(fmt::format("{}: not exported by this driver's NVML", what));
  available_ = true;
}

NvmlSampler::~NvmlSampler() {
  if (api_ != nullptr && api_->shutdown != nullptr && (available_ || !handles_.empty()))
    api_->shutdown();
  delete api_;
  if (library_ != nullptr) ::dlclose(library_);
}

std::vector<DeviceSample> NvmlSampler::sample() {
  std::vector<DeviceSample> out;
  if (!available_) return out;
  for (auto [index, d] : handles_) {
    DeviceSample s;
    s.index = index;
    Utilization u{};
    if (api_->utilization != nullptr && api_->utilization(d, &u) == kSuccess)
      s.utilization_pct = u.gpu;
    MemoryV2 m2{};
    m2.version = kMemoryV2;
    Memory m{};
    if (api_->memory_v2 != nullptr && api_->memory_v2(d, &m2) == kSuccess)
      s.memory_used_mib = static_cast<double>(m2.used) / (1024.0 * 1024.0);
    else if (api_->memory != nullptr && api_->memory(d, &m) == kSuccess)
      s.memory_used_mib = static_cast<double>(m.used) / (1024.0 * 1024.0);
    unsigned v = 0;
    if (api_->power != nullptr && api_->power(d, &v) == kSuccess) s.power_w = v / 1000.0;
    if (api_->clock != nullptr && api_->clock(d, kClockSm, &v) == kSuccess) s.sm_clock_mhz = v;
    if (api_->temperature != nullptr && api_->temperature(d, kTemperatureGpu, &v) == kSuccess)
      s.temperature_c = v;
    if (api_->clock != nullptr && api_->clock(d, kClockMem, &v) == kSuccess) s.mem_clock_mhz = v;
    unsigned long long reasons = 0;
    if (api_->clocks_event_reasons != nullptr &&
        api_->clocks_event_reasons(d, &reasons) == kSuccess)
      s.clocks_event_reasons = reasons;
    out.push_back(s);
  }
  return out;
}

}  // namespace magpie::gpu
