#include "gpu/nvml.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cstdio>

#include "gpu/detail/nvml_api.hpp"

namespace magpie::gpu {

double driver_memory_bandwidth_tbps(const DeviceStatus& device) {
  // HBM and GDDR both move data on both clock edges as NVML counts the clock.
  return static_cast<double>(device.max_mem_clock_mhz) * 1e6 * 2 *
         (device.memory_bus_width_bits / 8.0) / 1e12;
}

std::string cuda_version_string(int driver_version) {
  if (driver_version <= 0) return {};
  return fmt::format("{}.{}", driver_version / 1000, (driver_version % 1000) / 10);
}

std::optional<uint64_t> pci_bus_key(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) {
    return std::nullopt;
  }
  return (uint64_t{domain} << 32) | (uint64_t{bus & 0xff} << 16) | (uint64_t{device & 0xff} << 8) |
         uint64_t{function & 0xff};
}

namespace {

// A dlopen'ed library. `keep_loaded` leaves it mapped at destruction: the CUDA
// driver starts threads in cuInit, and unmapping it under them crashes at exit.
class SharedObject {
 public:
  SharedObject(const std::string& name, bool keep_loaded)
      : handle_(::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)), keep_loaded_(keep_loaded) {
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      error_ = why != nullptr ? why : "dlopen failed";
    }
  }
  ~SharedObject() {
    if (handle_ != nullptr && !keep_loaded_) ::dlclose(handle_);
  }
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  template <typename Fn>
  Fn symbol(const char* name) const {
    return handle_ == nullptr ? nullptr : reinterpret_cast<Fn>(::dlsym(handle_, name));
  }

 private:
  void* handle_;
  bool keep_loaded_;
  std::string error_;
};

// Every NVML entry point query_nvml uses; nullptr where this driver's NVML lacks it.
struct NvmlApi {
#define MAGPIE_NVML_ENTRY(name) decltype(&::name) name = nullptr;
// clang-format off
#define MAGPIE_NVML_ENTRIES(X) \
  X(nvmlInit_v2) \
  X(nvmlShutdown) \
  X(nvmlErrorString) \
  X(nvmlSystemGetDriverVersion) \
  X(nvmlSystemGetCudaDriverVersion_v2) \
  X(nvmlDeviceGetCount_v2) \
  X(nvmlDeviceGetHandleByIndex_v2) \
  X(nvmlDeviceGetName) \
  X(nvmlDeviceGetUUID) \
  X(nvmlDeviceGetPciInfo_v3) \
  X(nvmlDeviceGetCudaComputeCapability) \
  X(nvmlDeviceGetMemoryInfo) \
  X(nvmlDeviceGetMemoryInfo_v2) \
  X(nvmlDeviceGetClockInfo) \
  X(nvmlDeviceGetMaxClockInfo) \
  X(nvmlDeviceGetMemoryBusWidth) \
  X(nvmlDeviceGetPowerManagementLimit) \
  X(nvmlDeviceGetEnforcedPowerLimit) \
  X(nvmlDeviceGetPowerUsage) \
  X(nvmlDeviceGetMigMode) \
  X(nvmlDeviceGetEccMode) \
  X(nvmlDeviceGetCurrPcieLinkGeneration) \
  X(nvmlDeviceGetCurrPcieLinkWidth) \
  X(nvmlDeviceGetMaxPcieLinkGeneration) \
  X(nvmlDeviceGetMaxPcieLinkWidth)
  // clang-format on
  MAGPIE_NVML_ENTRIES(MAGPIE_NVML_ENTRY)
#undef MAGPIE_NVML_ENTRY
  detail::NvmlGetTemperatureV nvmlDeviceGetTemperatureV = nullptr;
  detail::NvmlGetTemperature nvmlDeviceGetTemperature = nullptr;

  explicit NvmlApi(const SharedObject& lib) {
#define MAGPIE_NVML_RESOLVE(name) name = lib.symbol<decltype(name)>(#name);
    MAGPIE_NVML_ENTRIES(MAGPIE_NVML_RESOLVE)
    MAGPIE_NVML_RESOLVE(nvmlDeviceGetTemperatureV)
    MAGPIE_NVML_RESOLVE(nvmlDeviceGetTemperature)
#undef MAGPIE_NVML_RESOLVE
  }
#undef MAGPIE_NVML_ENTRIES

  std::string error(nvmlReturn_t code) const {
    const char* text = nvmlErrorString != nullptr ? nvmlErrorString(code) : nullptr;
    if (text != nullptr) return fmt::format("{} (NVML error {})", text, static_cast<int>(code));
    return fmt::format("NVML error {}", static_cast<int>(code));
  }
};

// Reads one device field by field; a failing call leaves its field empty and
// says why in the notes, and the next field is still read.
class DeviceReader {
 public:
  DeviceReader(const NvmlApi& api, nvmlDevice_t device, DeviceStatus& out,
               std::vector<std::string>& notes)
      : api_(api), device_(device), out_(out), notes_(notes) {}

  template <typename Fn, typename... Args>
  bool call(const char* field, const char* symbol, Fn fn, Args... args) {
    if (fn == nullptr) {
      note(field, fmt::format("{} is not exported by this driver's NVML", symbol));
      return false;
    }
    nvmlReturn_t rc = fn(device_, args...);
    if (rc == NVML_SUCCESS) return true;
    note(field, api_.error(rc));
    return false;
  }

  void note(const char* field, const std::string& why) {
    notes_.push_back(fmt::format("GPU {}: {}: {}", out_.index, field, why));
  }

  void read_all() {
    std::array<char, 256> text{};
    if (call("name", "nvmlDeviceGetName", api_.nvmlDeviceGetName, text.data(),
             static_cast<unsigned>(text.size()))) {
      out_.name = text.data();
    }
    text.fill(0);
    if (call("uuid", "nvmlDeviceGetUUID", api_.nvmlDeviceGetUUID, text.data(),
             static_cast<unsigned>(text.size()))) {
      out_.uuid = text.data();
    }
    nvmlPciInfo_t pci{};
    if (call("pci_bus_id", "nvmlDeviceGetPciInfo_v3", api_.nvmlDeviceGetPciInfo_v3, &pci)) {
      out_.pci_bus_id = pci.busId;
    }
    int major = 0, minor = 0;
    if (call("compute_capability", "nvmlDeviceGetCudaComputeCapability",
             api_.nvmlDeviceGetCudaComputeCapability, &major, &minor)) {
      out_.cc_major = major;
      out_.cc_minor = minor;
    }
    read_memory();
    read_bus_width();
    read_clocks();
    read_power();
    read_temperature();
    read_modes();
    read_pcie();
  }

 private:
  void read_memory() {
    // v2 separates the driver's reservation from "used"; v1 folds it in.
    if (api_.nvmlDeviceGetMemoryInfo_v2 != nullptr) {
      nvmlMemory_v2_t mem{};
      mem.version = detail::kNvmlMemoryV2;
      if (api_.nvmlDeviceGetMemoryInfo_v2(device_, &mem) == NVML_SUCCESS) {
        out_.memory_total = mem.total;
        out_.memory_free = mem.free;
        out_.memory_used = mem.used;
        return;
      }
    }
    nvmlMemory_t mem{};
    if (call("memory", "nvmlDeviceGetMemoryInfo", api_.nvmlDeviceGetMemoryInfo, &mem)) {
      out_.memory_total = mem.total;
      out_.memory_free = mem.free;
      out_.memory_used = mem.used;
    }
  }

  void read_bus_width() {
    unsigned bits = 0;
    if (call("memory_bus_width_bits", "nvmlDeviceGetMemoryBusWidth",
             api_.nvmlDeviceGetMemoryBusWidth, &bits)) {
      out_.memory_bus_width_bits = bits;
    }
  }

  void read_clocks() {
    unsigned mhz = 0;
    if (call("sm_clock_mhz", "nvmlDeviceGetClockInfo", api_.nvmlDeviceGetClockInfo, NVML_CLOCK_SM,
             &mhz)) {
      out_.sm_clock_mhz = mhz;
    }
    if (call("mem_clock_mhz", "nvmlDeviceGetClockInfo", api_.nvmlDeviceGetClockInfo, NVML_CLOCK_MEM,
             &mhz)) {
      out_.mem_clock_mhz = mhz;
    }
    if (call("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", api_.nvmlDeviceGetMaxClockInfo,
             NVML_CLOCK_SM, &mhz)) {
      out_.max_sm_clock_mhz = mhz;
    }
    if (call("max_mem_clock_mhz", "nvmlDeviceGetMaxClockInfo", api_.nvmlDeviceGetMaxClockInfo,
             NVML_CLOCK_MEM, &mhz)) {
      out_.max_mem_clock_mhz = mhz;
    }
  }

  void read_power() {
    unsigned milliwatts = 0;
    // nvidia-smi's power.limit is the management limit; the enforced limit is the
    // fallback (it can be lower when another agent caps the board).
    if (api_.nvmlDeviceGetPowerManagementLimit != nullptr &&
        api_.nvmlDeviceGetPowerManagementLimit(device_, &milliwatts) == NVML_SUCCESS) {
      out_.power_limit_w = milliwatts / 1000.0;
    } else if (call("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit",
                    api_.nvmlDeviceGetEnforcedPowerLimit, &milliwatts)) {
      out_.power_limit_w = milliwatts / 1000.0;
    }
    if (call("power_draw_w", "nvmlDeviceGetPowerUsage", api_.nvmlDeviceGetPowerUsage,
             &milliwatts)) {
      out_.power_draw_w = milliwatts / 1000.0;
    }
  }

  void read_temperature() {
    if (api_.nvmlDeviceGetTemperatureV != nullptr) {
      detail::NvmlTemperatureV1 t{detail::kNvmlTemperatureV1, NVML_TEMPERATURE_GPU, 0};
      if (api_.nvmlDeviceGetTemperatureV(device_, &t) == NVML_SUCCESS && t.temperature >= 0) {
        out_.temperature_c = static_cast<unsigned>(t.temperature);
        return;
      }
    }
    unsigned celsius = 0;
    if (call("temperature_c", "nvmlDeviceGetTemperature", api_.nvmlDeviceGetTemperature,
             NVML_TEMPERATURE_GPU, &celsius)) {
      out_.temperature_c = celsius;
    }
  }

  void read_modes() {
    unsigned current = 0, pending = 0;
    if (call("mig_enabled", "nvmlDeviceGetMigMode", api_.nvmlDeviceGetMigMode, &current,
             &pending)) {
      out_.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    }
    nvmlEnableState_t ecc = NVML_FEATURE_DISABLED, ecc_pending = NVML_FEATURE_DISABLED;
    if (call("ecc_enabled", "nvmlDeviceGetEccMode", api_.nvmlDeviceGetEccMode, &ecc,
             &ecc_pending)) {
      out_.ecc_enabled = ecc == NVML_FEATURE_ENABLED;
    }
  }

  void read_pcie() {
    unsigned v = 0;
    if (call("pcie.gen", "nvmlDeviceGetCurrPcieLinkGeneration",
             api_.nvmlDeviceGetCurrPcieLinkGeneration, &v)) {
      out_.pcie.gen = static_cast<int>(v);
    }
    if (call("pcie.width", "nvmlDeviceGetCurrPcieLinkWidth", api_.nvmlDeviceGetCurrPcieLinkWidth,
             &v)) {
      out_.pcie.width = static_cast<int>(v);
    }
    if (call("pcie.max_gen", "nvmlDeviceGetMaxPcieLinkGeneration",
             api_.nvmlDeviceGetMaxPcieLinkGeneration, &v)) {
      out_.pcie.max_gen = static_cast<int>(v);
    }
    if (call("pcie.max_width", "nvmlDeviceGetMaxPcieLinkWidth", api_.nvmlDeviceGetMaxPcieLinkWidth,
             &v)) {
      out_.pcie.max_width = static_cast<int>(v);
    }
  }

  const NvmlApi& api_;
  nvmlDevice_t device_;
  DeviceStatus& out_;
  std::vector<std::string>& notes_;
};

// The CUDA driver entry points used for the SM count (signatures from cuda.h:
// CUresult is an int enum, CUdevice an int). CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16.
using CuInit = int (*)(unsigned int);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceGetPciBusId = int (*)(char*, int, int);
constexpr int kCuAttributeMultiprocessorCount = 16;

// NVML has no SM count; the CUDA driver does. Devices are matched by PCI bus id,
// since CUDA's ordinals follow CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES, not NVML's.
void fill_sm_counts(const std::string& library, SystemStatus& status) {
  if (library.empty() || status.devices.empty()) return;
  SharedObject cuda(library, /*keep_loaded=*/true);
  if (!cuda.loaded()) {
    status.notes.push_back(fmt::format("CUDA driver not found ({}): SM counts unknown", library));
    return;
  }
  auto init = cuda.symbol<CuInit>("cuInit");
  auto get_count = cuda.symbol<CuDeviceGetCount>("cuDeviceGetCount");
  auto get_device = cuda.symbol<CuDeviceGet>("cuDeviceGet");
  auto get_attribute = cuda.symbol<CuDeviceGetAttribute>("cuDeviceGetAttribute");
  auto get_bus_id = cuda.symbol<CuDeviceGetPciBusId>("cuDeviceGetPCIBusId");
  if (!init || !get_count || !get_device || !get_attribute || !get_bus_id) {
    status.notes.push_back(
        fmt::format("{} lacks a device query entry point: SM counts unknown", library));
    return;
  }
  if (int rc = init(0); rc != 0) {
    status.notes.push_back(
        fmt::format("CUDA driver: cuInit failed (CUresult {}): SM counts unknown", rc));
    return;
  }
  int count = 0;
  if (get_count(&count) != 0) count = 0;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0, sms = 0;
    std::array<char, 64> bus{};
    if (get_device(&device, ordinal) != 0 ||
        get_bus_id(bus.data(), static_cast<int>(bus.size()), device) != 0 ||
        get_attribute(&sms, kCuAttributeMultiprocessorCount, device) != 0) {
      continue;
    }
    auto key = pci_bus_key(bus.data());
    for (auto& d : status.devices) {
      if (key && pci_bus_key(d.pci_bus_id) == key) d.sm_count = sms;
    }
  }
  for (const auto& d : status.devices) {
    if (d.sm_count == 0) {
      status.notes.push_back(fmt::format(
          "GPU {}: sm_count: not visible to the CUDA driver (CUDA_VISIBLE_DEVICES?)", d.index));
    }
  }
}

}  // namespace

SystemStatus query_nvml(const NvmlLibraries& libraries) {
  SystemStatus status;
  SharedObject nvml(libraries.nvml, /*keep_loaded=*/false);
  if (!nvml.loaded()) {
    status.notes.push_back(
        fmt::format("NVML not found ({}): no NVIDIA driver ({})", libraries.nvml, nvml.error()));
    return status;
  }
  NvmlApi api(nvml);
  if (api.nvmlInit_v2 == nullptr || api.nvmlDeviceGetCount_v2 == nullptr ||
      api.nvmlDeviceGetHandleByIndex_v2 == nullptr) {
    status.notes.push_back(fmt::format(
        "{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2: driver too old",
        libraries.nvml));
    return status;
  }
  if (nvmlReturn_t rc = api.nvmlInit_v2(); rc != NVML_SUCCESS) {
    status.notes.push_back(fmt::format("NVML could not start: {}", api.error(rc)));
    return status;
  }
  std::array<char, 96> text{};
  if (api.nvmlSystemGetDriverVersion != nullptr &&
      api.nvmlSystemGetDriverVersion(text.data(), static_cast<unsigned>(text.size())) ==
          NVML_SUCCESS) {
    status.driver_version = text.data();
  } else {
    status.notes.push_back("driver_version: not reported by NVML");
  }
  int cuda_version = 0;
  if (api.nvmlSystemGetCudaDriverVersion_v2 != nullptr &&
      api.nvmlSystemGetCudaDriverVersion_v2(&cuda_version) == NVML_SUCCESS) {
    status.cuda_version = cuda_version_string(cuda_version);
  } else {
    status.notes.push_back("cuda_version: not reported by NVML");
  }

  unsigned count = 0;
  if (nvmlReturn_t rc = api.nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) {
    status.notes.push_back(fmt::format("NVML device count: {}", api.error(rc)));
    count = 0;
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t handle = nullptr;
    if (nvmlReturn_t rc = api.nvmlDeviceGetHandleByIndex_v2(i, &handle); rc != NVML_SUCCESS) {
      status.notes.push_back(fmt::format("GPU {}: skipped: {}", i, api.error(rc)));
      continue;
    }
    DeviceStatus device;
    device.index = static_cast<int>(i);
    DeviceReader(api, handle, device, status.notes).read_all();
    status.devices.push_back(std::move(device));
  }
  if (api.nvmlShutdown != nullptr) api.nvmlShutdown();
  if (status.devices.empty()) {
    status.notes.push_back("NVML is loaded but reports no GPU");
  } else {
    status.vendor = "NVIDIA";
    fill_sm_counts(libraries.cuda, status);
  }
  return status;
}

}  // namespace magpie::gpu
