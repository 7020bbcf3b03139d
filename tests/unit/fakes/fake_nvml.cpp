// A stand-in libnvidia-ml for gpu_nvml_test: two fixed GPUs, some fields "not
// supported", some entry points missing (as on an older driver), so that
// query_nvml's dlopen/dlsym path runs without a GPU. Types follow nvml.h's ABI:
// nvmlReturn_t and enums are ints, nvmlDevice_t an opaque pointer.
#include <cstdlib>
#include <cstring>

namespace {
constexpr int kSuccess = 0, kNotSupported = 3, kInvalidArgument = 2, kArgumentVersionMismatch = 25;
struct FakeDevice {
  int index;
};
FakeDevice g_devices[2] = {{0}, {1}};
int index_of(void* device) { return static_cast<FakeDevice*>(device)->index; }
int copy(char* out, unsigned length, const char* text) {
  if (std::strlen(text) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(out, text);
  return kSuccess;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2() {
  // MAGPIE_FAKE_NVML_INIT=<code> makes init fail with that NVML code.
  const char* forced = std::getenv("MAGPIE_FAKE_NVML_INIT");
  return forced != nullptr ? std::atoi(forced) : kSuccess;
}
__attribute__((visibility("default"))) int nvmlShutdown() { return kSuccess; }
__attribute__((visibility("default"))) const char* nvmlErrorString(int code) {
  switch (code) {
    case kNotSupported:
      return "Not Supported";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* out, unsigned length) {
  return copy(out, length, "580.95.05");
}
__attribute__((visibility("default"))) int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 13000;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 2;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned index,
                                                                         void** device) {
  if (index >= 2) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void*, char* out, unsigned length) {
  return copy(out, length, "NVIDIA H200");
}
__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* device, char* out,
                                                             unsigned length) {
  return copy(out, length,
              index_of(device) == 0 ? "GPU-00000000-1111-2222-3333-444444444444"
                                    : "GPU-55555555-6666-7777-8888-999999999999");
}
struct PciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  std::memset(pci, 0, sizeof(*pci));
  std::strcpy(pci->busId, index_of(device) == 0 ? "00000000:19:00.0" : "00000000:3B:00.0");
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryBusWidth(void*, unsigned* bits) {
  *bits = 6144;  // H200's HBM3e
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCudaComputeCapability(void*, int* major,
                                                                              int* minor) {
  *major = 9;
  *minor = 0;
  return kSuccess;
}
struct MemoryV2 {
  unsigned version;
  unsigned long long total, reserved, free, used;
};
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo_v2(void*, MemoryV2* memory) {
  if (memory->version != (sizeof(MemoryV2) | (2U << 24))) return kArgumentVersionMismatch;
  memory->total = 150754820096ULL;  // 143771 MiB
  memory->reserved = 1ULL << 29;
  memory->used = 1ULL << 20;
  memory->free = memory->total - memory->reserved - memory->used;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(void*, int type, unsigned* mhz) {
  *mhz = type == 1 ? 345 : 3201;  // NVML_CLOCK_SM : NVML_CLOCK_MEM
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMaxClockInfo(void*, int type,
                                                                     unsigned* mhz) {
  *mhz = type == 1 ? 1980 : 3201;
  return kSuccess;
}
// Only the enforced limit, as on a driver whose management limit is unsupported.
__attribute__((visibility("default"))) int nvmlDeviceGetPowerManagementLimit(void*, unsigned*) {
  return kNotSupported;
}
__attribute__((visibility("default"))) int nvmlDeviceGetEnforcedPowerLimit(void*,
                                                                           unsigned* milliwatts) {
  *milliwatts = 700000;
  return kSuccess;
}
// nvmlDeviceGetPowerUsage, nvmlDeviceGetTemperatureV and the PCIe max-link calls
// are deliberately absent.
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void*, int, unsigned* celsius) {
  *celsius = 31;
  return kSuccess;
}
// Clock-lowering reasons: GPU idle unless MAGPIE_FAKE_NVML_CLOCKS_EVENT_REASONS
// names a mask (e.g. 0x4, sw_power_cap), for the throttle warning a real idle
// GPU cannot be made to show on demand.
__attribute__((visibility("default"))) int nvmlDeviceGetCurrentClocksEventReasons(
    void*, unsigned long long* reasons) {
  const char* forced = std::getenv("MAGPIE_FAKE_NVML_CLOCKS_EVENT_REASONS");
  *reasons = forced != nullptr ? std::strtoull(forced, nullptr, 0) : 0x1ULL;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMigMode(void*, unsigned*, unsigned*) {
  return kNotSupported;
}
__attribute__((visibility("default"))) int nvmlDeviceGetEccMode(void*, int* current, int* pending) {
  *current = 1;
  *pending = 1;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCurrPcieLinkGeneration(void*,
                                                                               unsigned* gen) {
  *gen = 5;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCurrPcieLinkWidth(void*, unsigned* width) {
  *width = 16;
  return kSuccess;
}
}
