#pragma once
// The machine's NVIDIA GPUs as NVML (and, for the SM count, the CUDA driver)
// report them. Both libraries are opened with dlopen at call time, never linked:
// on a machine without a driver query_nvml() returns no devices and a note.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace magpie::gpu {

struct PcieLink {
  int gen = 0, width = 0, max_gen = 0, max_width = 0;  // 0 = unknown
};

// One GPU. A zero or empty field means "not reported": SystemStatus::notes says why.
struct DeviceStatus {
  int index = 0;                       // NVML index (nvidia-smi's order: PCI bus order)
  std::string name, uuid, pci_bus_id;  // "NVIDIA H200", "GPU-…", "00000000:19:00.0"
  int cc_major = 0, cc_minor = 0;      // compute capability
  std::string arch;                    // AMD: "gfx942" from amd-smi/rocminfo; NVIDIA: "" (from cc)
  int sm_count = 0;                    // CUDA driver's MULTIPROCESSOR_COUNT (AMD: CUs); 0 = unknown
  uint64_t memory_total = 0, memory_free = 0, memory_used = 0;  // bytes
  unsigned memory_bus_width_bits = 0;
  unsigned sm_clock_mhz = 0, mem_clock_mhz = 0, max_sm_clock_mhz = 0, max_mem_clock_mhz = 0;
  double power_limit_w = 0, power_draw_w = 0;
  unsigned temperature_c = 0;
  std::optional<bool> mig_enabled, ecc_enabled;  // nullopt = not supported / not reported
  PcieLink pcie;
};

struct SystemStatus {
  std::string vendor;          // "NVIDIA" | "AMD" | "" (none found)
  std::string driver_version;  // "580.95.05"
  std::string cuda_version;    // highest CUDA the driver supports, "13.0"
  std::vector<DeviceStatus> devices;
  std::vector<std::string> notes;  // why devices or fields are missing
};

// Which shared objects query_nvml opens; tests point these at a stand-in.
struct NvmlLibraries {
  std::string nvml = "libnvidia-ml.so.1";
  std::string cuda = "libcuda.so.1";  // "" = do not ask the CUDA driver for SM counts
};

// Peak memory bandwidth the driver's figures imply (max memory clock x 2
// transfers per clock x bus width), TB/s; 0 when either is unreported. The
// fallback for GPUs the datasheet does not know.
double driver_memory_bandwidth_tbps(const DeviceStatus& device);

// Never throws for a missing or broken driver: empty devices and a note instead.
SystemStatus query_nvml(const NvmlLibraries& libraries = {});

// "13.0" from nvmlSystemGetCudaDriverVersion_v2's 13000; "" for 0 or less.
std::string cuda_version_string(int driver_version);

// "00000000:19:00.0" and "0000:19:00.0" name the same device; nullopt if unparsable.
std::optional<uint64_t> pci_bus_key(const std::string& bus_id);

}  // namespace magpie::gpu
