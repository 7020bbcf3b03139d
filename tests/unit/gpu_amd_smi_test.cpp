// amd-smi's JSON into the typed SystemStatus, on samples laid out as amd-smi
// prints them (tests/data/amd_smi/README.md says where the shapes come from),
// and the "no amd-smi" path on this machine, which has no AMD GPU.
#include <gtest/gtest.h>

#include "core/file_io.hpp"
#include "gpu/amd_smi.hpp"
#include "gpu/datasheet_json.hpp"

namespace magpie::gpu {
namespace {

std::string sample(const char* name) {
  auto buf = read_file(std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data/amd_smi" / name);
  return std::string(buf.view());
}

TEST(GpuAmdSmi, StaticAndMetricOfTwoMi300x) {
  auto s = parse_amd_smi(sample("mi300x_static.json"), sample("mi300x_metric.json"));
  EXPECT_EQ(s.vendor, "AMD");
  EXPECT_EQ(s.driver_version, "6.7.0");
  ASSERT_EQ(s.devices.size(), 2u);
  const auto& d = s.devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.name, "AMD Instinct MI300X");
  EXPECT_EQ(d.arch, "gfx942");
  EXPECT_EQ(d.uuid, "0x6F1F0A2B3C4D5E6F");
  EXPECT_EQ(d.pci_bus_id, "0000:05:00.0");
  EXPECT_EQ(d.sm_count, 304);
  EXPECT_EQ(d.memory_total, 196592ULL << 20);
  EXPECT_EQ(d.memory_used, 283ULL << 20);
  EXPECT_EQ(d.memory_free, 196309ULL << 20);
  EXPECT_DOUBLE_EQ(d.power_limit_w, 750);
  EXPECT_DOUBLE_EQ(d.power_draw_w, 133);
  EXPECT_EQ(d.sm_clock_mhz, 131u);
  EXPECT_EQ(d.max_sm_clock_mhz, 2100u);
  EXPECT_EQ(d.mem_clock_mhz, 900u);
  EXPECT_EQ(d.temperature_c, 35u);  // hotspot, as rocm-smi's junction
  EXPECT_EQ(d.pcie.width, 16);
  // "N/A" fields stay unknown; free memory is derived from total - used.
  const auto& d1 = s.devices[1];
  EXPECT_EQ(d1.power_limit_w, 0);
  EXPECT_EQ(d1.power_draw_w, 0);
  EXPECT_EQ(d1.memory_free, (196592ULL - 1024) << 20);
  // The same datasheet entry as a trace's "AMD Instinct MI300X".
  EXPECT_EQ(device_datasheet_json(d)["entry"]["name"], "MI300X");
}

TEST(GpuAmdSmi, Rocm7GpuDataWrapperAndStaticOnly) {
  auto s = parse_amd_smi(sample("mi210_static_rocm7.json"), "");
  ASSERT_EQ(s.devices.size(), 1u);
  const auto& d = s.devices[0];
  EXPECT_EQ(d.name, "AMD Instinct MI210");
  EXPECT_EQ(d.arch, "gfx90a");
  EXPECT_EQ(d.sm_count, 104);
  EXPECT_EQ(d.memory_total, 65520ULL << 20);
  EXPECT_EQ(d.memory_bus_width_bits, 4096u);
  EXPECT_DOUBLE_EQ(d.power_limit_w, 300);
  EXPECT_EQ(d.pcie.max_width, 16);
  EXPECT_EQ(device_datasheet_json(d)["entry"]["name"], "MI210");
}

TEST(GpuAmdSmi, BadOutputIsANoteNotAnError) {
  auto s = parse_amd_smi("amd-smi: command failed", "");
  EXPECT_TRUE(s.devices.empty());
  EXPECT_TRUE(s.vendor.empty());
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.front().find("not JSON"), std::string::npos);
  EXPECT_TRUE(parse_amd_smi("{\"gpu_data\": 3}", "").devices.empty());
}

TEST(GpuAmdSmi, RocminfoArchitecture) {
  EXPECT_EQ(parse_rocminfo_arch("  Name:                    gfx942                             \n"
                                "  Marketing Name:          AMD Instinct MI300X\n"),
            "gfx942");
  EXPECT_EQ(parse_rocminfo_arch("  Name: AMD EPYC 9575F\n"), "");
}

TEST(GpuAmdSmi, NoAmdSmiSaysSo) {
  // This machine has neither amd-smi nor rocminfo; with PATH and ROCM_PATH
  // pointing nowhere, the same holds on any machine.
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path != nullptr ? old_path : "";
  ::setenv("PATH", "/nonexistent", 1);
  ::setenv("ROCM_PATH", "/nonexistent", 1);
  auto s = query_amd_gpus();
  ::setenv("PATH", saved.c_str(), 1);
  ::unsetenv("ROCM_PATH");
  EXPECT_TRUE(s.devices.empty());
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.front().find("amd-smi not found"), std::string::npos) << s.notes.front();
}

}  // namespace
}  // namespace magpie::gpu
