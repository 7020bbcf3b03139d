#pragma once
// Repeated NVML reads for a monitor thread: NVML is opened (dlopen + init) once
// and each sample() reads only the fast-changing fields, so sampling every
// few hundred milliseconds costs next to nothing. query_nvml() is the one-shot
// full description; this is its cheap, repeatable sibling.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml.hpp"

namespace magpie::gpu {

// One GPU at one moment; nullopt = this driver does not report the field.
struct DeviceSample {
  int index = 0;
  std::optional<double> utilization_pct;  // % of time a kernel ran over the driver's last period
  std::optional<double> memory_used_mib;
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> mem_clock_mhz;
  // NVML's clocks event ("throttle") reason bits at this moment
  // (nvmlClocksEventReasons); nullopt when the driver does not report them.
  std::optional<uint64_t> clocks_event_reasons;
};

// The reasons a mask names, NVML's bits spelled as short names
// ("sw_power_cap", "hw_thermal_slowdown", ...); unknown bits as "bit_N".
std::vector<std::string> clocks_event_reason_names(uint64_t mask);
// The bits that lower the clocks below what the workload asks for (power and
// thermal caps, hardware slowdown), as opposed to idle, sync boost or a
// clock the user set.
constexpr uint64_t kThrottleReasonMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

class NvmlSampler {
 public:
  // Opens NVML and the handles of `indices` (empty = every GPU). Never throws:
  // available() is false and unavailable_reason() says why.
  explicit NvmlSampler(std::vector<int> indices = {}, const NvmlLibraries& libraries = {});
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const { return available_; }
  const std::string& unavailable_reason() const { return reason_; }
  // Names by index, read once at open.
  const std::vector<std::pair<int, std::string>>& devices() const { return names_; }
  // Fields a driver lacks, noted once (not per sample).
  const std::vector<std::string>& notes() const { return notes_; }

  std::vector<DeviceSample> sample();

 private:
  struct Api;
  void* library_ = nullptr;
  Api* api_ = nullptr;
  std::vector<std::pair<int, void*>> handles_;
  std::vector<std::pair<int, std::string>> names_;
  std::vector<std::string> notes_;
  bool available_ = false;
  std::string reason_;
};

}  // namespace magpie::gpu
