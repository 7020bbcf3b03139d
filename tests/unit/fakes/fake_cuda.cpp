// A stand-in libcuda for gpu_nvml_test: the two GPUs of fake_nvml.cpp in the
// other order (as CUDA_DEVICE_ORDER=FASTEST_FIRST may give), with CUDA's short
// PCI bus id form, so that SM counts must be matched by bus id, not ordinal.
// MAGPIE_FAKE_CUDA_ONLY_ONE=1 hides the second GPU (as CUDA_VISIBLE_DEVICES would).
#include <cstdlib>
#include <cstring>

extern "C" {
__attribute__((visibility("default"))) int cuInit(unsigned) { return 0; }
__attribute__((visibility("default"))) int cuDeviceGetCount(int* count) {
  *count = std::getenv("MAGPIE_FAKE_CUDA_ONLY_ONE") != nullptr ? 1 : 2;
  return 0;
}
__attribute__((visibility("default"))) int cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
__attribute__((visibility("default"))) int cuDeviceGetPCIBusId(char* out, int length, int device) {
  const char* id = device == 0 ? "0000:3B:00.0" : "0000:19:00.0";
  if (static_cast<int>(std::strlen(id)) + 1 > length) return 1;
  std::strcpy(out, id);
  return 0;
}
__attribute__((visibility("default"))) int cuDeviceGetAttribute(int* value, int attribute,
                                                                int device) {
  if (attribute != 16) return 1;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  *value = device == 0 ? 114 : 132;
  return 0;
}
}
