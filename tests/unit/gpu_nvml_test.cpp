// query_nvml without a driver and against a stand-in libnvidia-ml, and the
// --gpu-info writers on a hand-built report.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

#include "gpu/gpu_info_report.hpp"
#include "gpu/nvml.hpp"

namespace magpie::gpu {
namespace {

bool has_note(const SystemStatus& s, const std::string& needle) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

TEST(GpuNvml, MissingLibraryGivesNoDevicesAndANote) {
  auto status = query_nvml({"libnvidia-ml-absent.so.1", "libcuda-absent.so.1"});
  EXPECT_TRUE(status.devices.empty());
  EXPECT_TRUE(status.vendor.empty());
  ASSERT_FALSE(status.notes.empty());
  EXPECT_TRUE(has_note(status, "NVML not found (libnvidia-ml-absent.so.1)"))
      << status.notes.front();
}

TEST(GpuNvml, DefaultLibraryNeverThrows) {
  // With or without a driver on this machine: no exception, and either devices or a reason.
  SystemStatus status;
  EXPECT_NO_THROW(status = query_nvml());
  EXPECT_TRUE(!status.devices.empty() || !status.notes.empty());
}

TEST(GpuNvml, ReadsEveryFieldTheStandInReports) {
  auto status = query_nvml({MAGPIE_FAKE_NVML_PATH, ""});
  EXPECT_EQ(status.vendor, "NVIDIA");
  EXPECT_EQ(status.driver_version, "580.95.05");
  EXPECT_EQ(status.cuda_version, "13.0");
  ASSERT_EQ(status.devices.size(), 2u);
  const auto& d = status.devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(d.pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(d.cc_major, 9);
  EXPECT_EQ(d.cc_minor, 0);
  EXPECT_EQ(d.memory_total, 150754820096ULL);
  EXPECT_EQ(d.memory_used, 1ULL << 20);
  EXPECT_EQ(d.memory_free, 150754820096ULL - (1ULL << 29) - (1ULL << 20));
  EXPECT_EQ(d.sm_clock_mhz, 345u);
  EXPECT_EQ(d.mem_clock_mhz, 3201u);
  EXPECT_EQ(d.max_sm_clock_mhz, 1980u);
  EXPECT_EQ(d.max_mem_clock_mhz, 3201u);
  EXPECT_EQ(d.memory_bus_width_bits, 6144u);
  // 3201 MHz x 2 x 768 bytes = 4.92 TB/s: the driver's view of H200's 4.8 TB/s.
  EXPECT_NEAR(driver_memory_bandwidth_tbps(d), 4.917, 0.001);
  EXPECT_DOUBLE_EQ(d.power_limit_w, 700.0);  // enforced limit, the management limit unsupported
  EXPECT_EQ(d.temperature_c, 31u);           // nvmlDeviceGetTemperature, no ...TemperatureV
  EXPECT_EQ(d.ecc_enabled, std::optional<bool>(true));
  EXPECT_EQ(d.pcie.gen, 5);
  EXPECT_EQ(d.pcie.width, 16);
  EXPECT_EQ(status.devices[1].pci_bus_id, "00000000:3B:00.0");
}

TEST(GpuNvml, UnsupportedOrMissingFieldsStayEmptyWithAReason) {
  auto status = query_nvml({MAGPIE_FAKE_NVML_PATH, ""});
  ASSERT_EQ(status.devices.size(), 2u);
  const auto& d = status.devices[0];
  EXPECT_FALSE(d.mig_enabled.has_value());
  EXPECT_EQ(d.power_draw_w, 0.0);
  EXPECT_EQ(d.pcie.max_gen, 0);
  EXPECT_EQ(d.sm_count, 0);  // no CUDA driver asked
  EXPECT_TRUE(has_note(status, "GPU 0: mig_enabled: Not Supported (NVML error 3)"));
  EXPECT_TRUE(has_note(status, "GPU 0: power_draw_w: nvmlDeviceGetPowerUsage is not exported"));
  EXPECT_TRUE(
      has_note(status, "GPU 1: pcie.max_gen: nvmlDeviceGetMaxPcieLinkGeneration is not exported"));
}

TEST(GpuNvml, InitFailureIsANoteNotAnError) {
  ::setenv("MAGPIE_FAKE_NVML_INIT", "9", 1);
  auto status = query_nvml({MAGPIE_FAKE_NVML_PATH, ""});
  ::unsetenv("MAGPIE_FAKE_NVML_INIT");
  EXPECT_TRUE(status.devices.empty());
  EXPECT_TRUE(status.vendor.empty());
  EXPECT_TRUE(has_note(status, "NVML could not start: Driver Not Loaded (NVML error 9)"));
}

TEST(GpuNvml, MissingCudaDriverLeavesSmCountUnknown) {
  auto status = query_nvml({MAGPIE_FAKE_NVML_PATH, "libcuda-absent.so.1"});
  ASSERT_EQ(status.devices.size(), 2u);
  EXPECT_EQ(status.devices[0].sm_count, 0);
  EXPECT_TRUE(has_note(status, "CUDA driver not found (libcuda-absent.so.1): SM counts unknown"));
}

TEST(GpuNvml, SmCountsAreMatchedByPciBusIdNotOrdinal) {
  auto status = query_nvml({MAGPIE_FAKE_NVML_PATH, MAGPIE_FAKE_CUDA_PATH});
  ASSERT_EQ(status.devices.size(), 2u);
  EXPECT_EQ(status.devices[0].sm_count, 132);  // 19:00.0 is CUDA ordinal 1
  EXPECT_EQ(status.devices[1].sm_count, 114);  // 3B:00.0 is CUDA ordinal 0
  EXPECT_FALSE(has_note(status, "sm_count"));
}

TEST(GpuNvml, GpuHiddenFromCudaKeepsItsNvmlFields) {
  ::setenv("MAGPIE_FAKE_CUDA_ONLY_ONE", "1", 1);
  auto status = query_nvml({MAGPIE_FAKE_NVML_PATH, MAGPIE_FAKE_CUDA_PATH});
  ::unsetenv("MAGPIE_FAKE_CUDA_ONLY_ONE");
  ASSERT_EQ(status.devices.size(), 2u);
  EXPECT_EQ(status.devices[0].sm_count, 0);
  EXPECT_EQ(status.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(status.devices[1].sm_count, 114);
  EXPECT_TRUE(has_note(status, "GPU 0: sm_count: not visible to the CUDA driver"));
}

TEST(GpuNvml, CudaVersionAndBusIdHelpers) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(0), "");
  EXPECT_EQ(pci_bus_key("00000000:19:00.0"), pci_bus_key("0000:19:00.0"));
  EXPECT_NE(pci_bus_key("00000000:19:00.0"), pci_bus_key("00000000:3B:00.0"));
  EXPECT_EQ(pci_bus_key("00000000:3b:00.0"), pci_bus_key("00000000:3B:00.0"));
  EXPECT_FALSE(pci_bus_key("not a bus id").has_value());
}

GpuInfoReport h200_report() {
  GpuInfoReport r;
  r.system.vendor = "NVIDIA";
  r.system.driver_version = "580.95.05";
  r.system.cuda_version = "13.0";
  DeviceStatus d;
  d.index = 0;
  d.name = "NVIDIA H200";
  d.uuid = "GPU-00000000-1111-2222-3333-444444444444";
  d.pci_bus_id = "00000000:19:00.0";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_total = 143771ULL << 20;
  d.memory_free = 143000ULL << 20;
  d.memory_used = 771ULL << 20;
  d.sm_clock_mhz = 345;
  d.mem_clock_mhz = 3201;
  d.max_sm_clock_mhz = 1980;
  d.max_mem_clock_mhz = 3201;
  d.power_limit_w = 700;
  d.power_draw_w = 75.5;
  d.temperature_c = 31;
  d.mig_enabled = false;
  d.ecc_enabled = true;
  d.pcie = {5, 16, 5, 16};
  r.system.devices.push_back(d);
  r.architecture = architecture_of(d);
  r.compiler = ToolStatus{"nvcc", "/usr/local/cuda/bin/nvcc",
                          "Cuda compilation tools, release 13.0, V13.0.88"};
  r.profilers = {{"ncu", "/usr/local/cuda/bin/ncu", ""},
                 {"libmagpie_cupti", "/opt/magpie/lib/libmagpie_cupti.so", ""}};
  return r;
}

TEST(GpuInfoReport, TextHasMagpiesLinesThenEachDevice) {
  std::string text = render_gpu_info_text(h200_report());
  for (const char* line :
       {"GPU Information:\n", "  Vendor: NVIDIA\n", "  Architecture: sm_90\n",
        "  Compiler: nvcc (/usr/local/cuda/bin/nvcc, Cuda compilation tools, release 13.0, "
        "V13.0.88)\n",
        "  Profiler: ncu (/usr/local/cuda/bin/ncu), libmagpie_cupti "
        "(/opt/magpie/lib/libmagpie_cupti.so)\n",
        "  Driver: 580.95.05\n", "  CUDA (driver): 13.0\n", "  GPU 0: NVIDIA H200\n",
        "    UUID: GPU-00000000-1111-2222-3333-444444444444\n",
        "    PCI bus id: 00000000:19:00.0\n", "    Compute capability: 9.0 (sm_90)\n",
        "    SMs: 132\n", "    Memory: 143771 MiB total, 143000 MiB free, 771 MiB used\n",
        "    SM clock: 345 MHz current, 1980 MHz max\n",
        "    Memory clock: 3201 MHz current, 3201 MHz max\n",
        "    Power: 700.0 W limit, 75.5 W draw\n", "    Temperature: 31 C\n",
        "    MIG: disabled, ECC: enabled\n", "    PCIe: gen 5 x16 (max gen 5 x16)\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  EXPECT_EQ(text.find("(No GPU detected)"), std::string::npos);
  EXPECT_LT(text.find("Vendor:"), text.find("Architecture:"));
  EXPECT_LT(text.find("Compiler:"), text.find("Profiler:"));
}

TEST(GpuInfoReport, TextWithoutGpuSaysWhy) {
  GpuInfoReport r;
  r.system.notes = {"NVML not found (libnvidia-ml.so.1): no NVIDIA driver"};
  std::string text = render_gpu_info_text(r);
  EXPECT_EQ(text.rfind("GPU Information:\n  (No GPU detected)\n", 0), 0u) << text;
  EXPECT_NE(text.find("  Compiler: (none found)\n"), std::string::npos);
  EXPECT_NE(text.find("  Profiler: (none found)\n"), std::string::npos);
  EXPECT_NE(text.find("  Reason:\n    - NVML not found (libnvidia-ml.so.1): no NVIDIA driver\n"),
            std::string::npos);
}

TEST(GpuInfoReport, UnknownDeviceFieldsPrintAsUnknown) {
  GpuInfoReport r;
  r.system.vendor = "NVIDIA";
  r.system.devices.push_back(DeviceStatus{});
  std::string text = render_gpu_info_text(r);
  EXPECT_NE(text.find("    SMs: (unknown)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    MIG: n/a, ECC: n/a\n"), std::string::npos);
  EXPECT_NE(text.find("    Temperature: ?\n"), std::string::npos);
  EXPECT_NE(text.find("    PCIe: (unknown)\n"), std::string::npos);
}

TEST(GpuInfoReport, JsonHasEveryDocumentedKey) {
  auto j = gpu_info_json(h200_report());
  for (const char* key : {"gpu_detected", "vendor", "architecture", "compiler", "profilers",
                          "driver_version", "cuda_version", "devices", "notes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["gpu_detected"], true);
  EXPECT_EQ(j["architecture"], "sm_90");
  EXPECT_EQ(j["compiler"]["name"], "nvcc");
  EXPECT_EQ(j["profilers"][1]["name"], "libmagpie_cupti");
  EXPECT_EQ(j["profilers"][0]["version"], nullptr);
  const auto& d = j["devices"][0];
  EXPECT_EQ(d["name"], "NVIDIA H200");
  EXPECT_EQ(d["compute_capability"], "9.0");
  EXPECT_EQ(d["sm_count"], 132);
  EXPECT_EQ(d["memory_total_bytes"], 143771ULL << 20);
  EXPECT_EQ(d["max_sm_clock_mhz"], 1980);
  EXPECT_EQ(d["power_limit_w"], 700.0);
  EXPECT_EQ(d["temperature_c"], 31);
  EXPECT_EQ(d["mig_enabled"], false);
  EXPECT_EQ(d["ecc_enabled"], true);
  EXPECT_EQ(d["pcie"]["gen"], 5);
  EXPECT_EQ(d["pcie"]["max_width"], 16);
  for (const char* key :
       {"index", "uuid", "pci_bus_id", "architecture", "memory_free_bytes", "memory_used_bytes",
        "sm_clock_mhz", "mem_clock_mhz", "max_mem_clock_mhz", "power_draw_w"}) {
    EXPECT_TRUE(d.contains(key)) << key;
  }
}

TEST(GpuInfoReport, JsonWithoutGpuUsesNulls) {
  GpuInfoReport r;
  r.system.notes = {"NVML not found"};
  auto j = gpu_info_json(r);
  EXPECT_EQ(j["gpu_detected"], false);
  EXPECT_EQ(j["vendor"], nullptr);
  EXPECT_EQ(j["compiler"], nullptr);
  EXPECT_TRUE(j["devices"].empty());
  EXPECT_EQ(j["notes"][0], "NVML not found");
}

}  // namespace
}  // namespace magpie::gpu
