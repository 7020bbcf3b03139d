// The one GPU datasheet: every required GPU present with sourced figures,
// names as drivers and traces spell them resolving to their entry, and the
// figures the old tables carried unchanged.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "core/file_io.hpp"
#include "gpu/datasheet.hpp"
#include "gpu/datasheet_json.hpp"
#include "kernel/gpu_info.hpp"

namespace magpie::gpu {
namespace {

std::string resolved(std::string_view name, int64_t mem = 0) {
  auto m = find_spec_for_device(name, mem);
  return m.spec != nullptr ? m.spec->name : "<none: " + m.reason + ">";
}

TEST(GpuDatasheet, CoversTheRequiredGpusWithSourcedFigures) {
  for (const char* name : {"V100",           "T4",     "A10",           "L4",
                           "L40S",           "A100",   "A100 SXM 40GB", "A100 PCIe 80GB",
                           "A100 PCIe 40GB", "H100",   "H100 PCIe",     "H100 NVL",
                           "H800",           "H20",    "H200",          "H200 NVL",
                           "GH200",          "B200",   "GB200",         "MI250X",
                           "MI300X",         "MI300A", "MI325X",        "MI355X"}) {
    const GpuSpec* s = find_spec(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->name, name);
    EXPECT_TRUE(s->memory_gb.known()) << name;
    EXPECT_TRUE(s->memory_bandwidth_tbps.known()) << name;
    EXPECT_FALSE(s->memory_bandwidth_tbps.source.empty()) << name;
    EXPECT_FALSE(s->arch.empty()) << name;
    auto fp16 = s->peak(Precision::kFp16, ExecUnit::kMatrix);
    ASSERT_TRUE(fp16) << name;
    EXPECT_GT(fp16->value, 0) << name;
  }
  // Every figure names where it comes from, known or not.
  for (const auto& s : datasheet()) {
    for (const auto& p : s.peaks) EXPECT_FALSE(p.tflops.source.empty()) << s.name;
    EXPECT_FALSE(s.tdp_w.source.empty()) << s.name;
    EXPECT_FALSE(s.compute_units.source.empty()) << s.name;
  }
}

TEST(GpuDatasheet, NamesAreUnique) {
  std::set<std::string> seen;
  for (const auto& s : datasheet()) EXPECT_TRUE(seen.insert(s.name).second) << s.name;
}

// Spellings as NVML/nvidia-smi, amd-smi and Kineto's deviceProperties print them.
TEST(GpuDatasheet, DriverAndTraceSpellingsResolve) {
  EXPECT_EQ(resolved("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(resolved("NVIDIA H100 PCIe"), "H100 PCIe");
  EXPECT_EQ(resolved("NVIDIA H100 NVL"), "H100 NVL");
  EXPECT_EQ(resolved("NVIDIA H200"), "H200");
  EXPECT_EQ(resolved("NVIDIA H200 NVL"), "H200 NVL");
  EXPECT_EQ(resolved("NVIDIA H800"), "H800");
  EXPECT_EQ(resolved("NVIDIA H20"), "H20");
  EXPECT_EQ(resolved("NVIDIA GH200 480GB"), "GH200");
  EXPECT_EQ(resolved("NVIDIA GH200 144G HBM3e"), "GH200 144GB");
  EXPECT_EQ(resolved("NVIDIA B200"), "B200");
  EXPECT_EQ(resolved("NVIDIA GB200"), "GB200");
  EXPECT_EQ(resolved("Tesla V100-SXM2-32GB"), "V100");
  EXPECT_EQ(resolved("Tesla V100-SXM2-16GB"), "V100 SXM2 16GB");
  EXPECT_EQ(resolved("Tesla V100-PCIE-16GB"), "V100 PCIe 16GB");
  EXPECT_EQ(resolved("Tesla T4"), "T4");
  EXPECT_EQ(resolved("NVIDIA A10"), "A10");
  EXPECT_EQ(resolved("NVIDIA L4"), "L4");
  EXPECT_EQ(resolved("NVIDIA L40S"), "L40S");
  EXPECT_EQ(resolved("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(resolved("NVIDIA A100-SXM4-40GB"), "A100 SXM 40GB");
  EXPECT_EQ(resolved("NVIDIA A100-PCIE-40GB"), "A100 PCIe 40GB");
  EXPECT_EQ(resolved("NVIDIA A100 80GB PCIe"), "A100 PCIe 80GB");
  EXPECT_EQ(resolved("NVIDIA A100-PG509-200", 42297524224), "A100 SXM 40GB");
  EXPECT_EQ(resolved("AMD Instinct MI300X"), "MI300X");
  EXPECT_EQ(resolved("AMD Instinct MI300X VF", 205571227648), "MI300X");
  EXPECT_EQ(resolved("Instinct MI300X"), "MI300X");  // amd-smi's market_name on some ROCm
  EXPECT_EQ(resolved("AMD Instinct MI300A"), "MI300A");
  EXPECT_EQ(resolved("AMD Instinct MI325X"), "MI325X");
  EXPECT_EQ(resolved("AMD Instinct MI355X"), "MI355X");
  EXPECT_EQ(resolved("AMD Instinct MI250X/MI250"), "MI250X");
  EXPECT_EQ(resolved("AMD Instinct MI250X", 64LL << 30), "MI250X");  // one GCD's memory
  EXPECT_EQ(resolved("AMD Instinct MI210"), "MI210");
}

// Issue 26, item 9: common workstation, consumer and cloud boards had no entry
// (no roofline). Names as the CUDA driver (Kineto's deviceProperties) spells them;
// memory as it reports it (GiB a little under the stated GB).
TEST(GpuDatasheet, WorkstationAndGeForceBoardsResolve) {
  EXPECT_EQ(resolved("NVIDIA GeForce RTX 3090", 25438126080), "RTX 3090");
  EXPECT_EQ(resolved("NVIDIA GeForce RTX 4090", 25386352640), "RTX 4090");
  EXPECT_EQ(resolved("NVIDIA GeForce RTX 4090 D", 25386352640), "RTX 4090 D");
  EXPECT_EQ(resolved("NVIDIA GeForce RTX 4090D"), "RTX 4090 D");
  EXPECT_EQ(resolved("NVIDIA GeForce RTX 4080 SUPER", 16852975616), "RTX 4080 SUPER");
  EXPECT_EQ(resolved("NVIDIA GeForce RTX 4060", 8585216000), "RTX 4060");
  EXPECT_EQ(resolved("NVIDIA RTX A6000", 51041271808), "RTX A6000");
  EXPECT_EQ(resolved("NVIDIA RTX 6000 Ada Generation", 51527024640), "RTX 6000 Ada");
  EXPECT_EQ(resolved("NVIDIA A10G", 23836753920), "A10G");
  EXPECT_EQ(resolved("NVIDIA A10"), "A10");  // A10G's word is not A10's
  // A GeForce board the table does not hold is not taken for a sibling.
  EXPECT_EQ(find_spec_for_device("NVIDIA GeForce RTX 4080").spec, nullptr);
  for (const char* name : {"RTX 3090", "RTX 4090", "RTX 4090 D", "RTX 4080 SUPER", "RTX 4060",
                           "RTX A6000", "RTX 6000 Ada"}) {
    const GpuSpec* s = find_spec(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_TRUE(s->memory_bandwidth_tbps.known()) << name;
    auto bf16 = s->peak(Precision::kBf16, ExecUnit::kMatrix);
    auto fp32 = s->peak(Precision::kFp32, ExecUnit::kVector);
    ASSERT_TRUE(bf16 && fp32) << name;
    // Dense tensor figures: the TF32 peak is half the BF16 one on these parts.
    EXPECT_NEAR(s->peak(Precision::kTf32, ExecUnit::kMatrix)->value * 2, bf16->value,
                0.01 * bf16->value)
        << name;
  }
  EXPECT_DOUBLE_EQ(find_spec("RTX 4090")->peak(Precision::kBf16, ExecUnit::kMatrix)->value, 165.2);
  EXPECT_DOUBLE_EQ(find_spec("RTX 3090")->memory_bandwidth_tbps.value, 0.936);
}

// Checked against vendor documents (docs/GPU_DATASHEET.md, "Sources of the workstation,
// GeForce and cloud rows"): the RTX 4060's AD107 has eight PCIe lanes, so its host link
// is Gen4 x8 (32 GB/s both ways), not the x16 (64) the row first carried.
TEST(GpuDatasheet, Rtx4060HostLinkIsGen4x8) {
  const GpuSpec* s = find_spec("RTX 4060");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->interconnect, "PCIe Gen4 x8");
  EXPECT_DOUBLE_EQ(s->interconnect_gbps.value, 32);
  EXPECT_EQ(s->interconnect_gbps.source.substr(0, 8), "derived:") << s->interconnect_gbps.source;
  // The x16 boards keep 64 GB/s.
  EXPECT_EQ(find_spec("RTX 4090")->interconnect, "PCIe Gen4 x16");
  EXPECT_DOUBLE_EQ(find_spec("RTX 4090")->interconnect_gbps.value, 64);
}

// AWS states the A10G's memory size only: its bandwidth is derived (NVIDIA A10's
// figure, same memory system) and says so; no compute peak is published, none is set.
TEST(GpuDatasheet, A10GBandwidthIsMarkedDerivedAndHasNoComputePeaks) {
  const GpuSpec* s = find_spec("A10G");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->memory_bandwidth_tbps.value, 0.6);
  EXPECT_EQ(s->memory_bandwidth_tbps.source.substr(0, 8), "derived:")
      << s->memory_bandwidth_tbps.source;
  EXPECT_DOUBLE_EQ(s->memory_gb.value, 24);
  for (auto p : {Precision::kBf16, Precision::kFp16, Precision::kTf32, Precision::kInt8}) {
    auto peak = s->peak(p, ExecUnit::kMatrix);
    EXPECT_TRUE(!peak || !peak->known());
  }
  EXPECT_FALSE(s->compute_units.known());
}

TEST(GpuDatasheet, UnknownOrAmbiguousNamesSayWhy) {
  auto unknown = find_spec_for_device("AMD Radeon Graphics", 68702699520);
  EXPECT_EQ(unknown.spec, nullptr);
  EXPECT_NE(unknown.reason.find("unknown GPU"), std::string::npos);
  EXPECT_NE(unknown.reason.find("driver-reported"), std::string::npos) << unknown.reason;
  // The PG509 board is 40 or 80 GB: without memory it cannot be told.
  auto pg509 = find_spec_for_device("NVIDIA A100-PG509-200");
  EXPECT_EQ(pg509.spec, nullptr);
  EXPECT_NE(pg509.reason.find("several entries"), std::string::npos) << pg509.reason;
}

// Every deviceProperties name in the repository's traces resolves, or is a
// name no datasheet can know ("AMD Radeon Graphics" is an unnamed MI210 board).
TEST(GpuDatasheet, TraceDeviceNamesInTestsDataResolve) {
  const auto dir = std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data/public_traces";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  const std::regex device(
      R"re("name":\s*"((?:NVIDIA|AMD|Tesla)[^"]*)"[^{}]*"totalGlobalMem":\s*(\d+))re");
  int checked = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string text;
    try {
      text = std::string(read_file(e.path()).view().substr(0, 4'000'000));
    } catch (const std::exception&) {
      continue;
    }
    for (std::sregex_iterator it(text.begin(), text.end(), device), end; it != end; ++it) {
      const std::string name = (*it)[1];
      if (name == "AMD Radeon Graphics") continue;
      auto m = find_spec_for_device(name, std::stoll((*it)[2]));
      EXPECT_NE(m.spec, nullptr) << e.path() << ": " << m.reason;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "no deviceProperties names found under " << dir;
}

// Where the two old tables (kernel/gpu_info.cpp, analysis/gpu_arch.cpp)
// agreed, the figures stand; where they differed, the vendor's figure is used
// (docs/GPU_DATASHEET.md lists both).
TEST(GpuDatasheet, FiguresOfTheOldTablesStand) {
  auto bf16 = [](const char* n) {
    return find_spec(n)->peak(Precision::kBf16, ExecUnit::kMatrix)->value;
  };
  auto bw = [](const char* n) { return find_spec(n)->memory_bandwidth_tbps.value; };
  EXPECT_DOUBLE_EQ(bf16("H100"), 989);
  EXPECT_DOUBLE_EQ(bf16("H200"), 989);
  EXPECT_DOUBLE_EQ(bf16("B200"), 2250);
  EXPECT_DOUBLE_EQ(bf16("A100"), 312);
  EXPECT_DOUBLE_EQ(bf16("MI300X"), 1307.4);  // kernel table said 1307
  EXPECT_DOUBLE_EQ(bf16("MI325X"), 1307.4);  // kernel table said 1307
  EXPECT_DOUBLE_EQ(bf16("MI350X"), 2307);
  EXPECT_DOUBLE_EQ(bf16("MI355X"), 2516.6);  // kernel table said 2517
  EXPECT_DOUBLE_EQ(bw("A100"), 2.039);       // kernel table said 2.04
  EXPECT_DOUBLE_EQ(bw("H100"), 3.35);
  EXPECT_DOUBLE_EQ(bw("H200"), 4.8);
  EXPECT_DOUBLE_EQ(bw("MI300X"), 5.3);
  EXPECT_DOUBLE_EQ(bw("MI325X"), 6.0);
  EXPECT_DOUBLE_EQ(bw("MI355X"), 8.0);
  EXPECT_FALSE(find_spec("B200")->peak(Precision::kFp32, ExecUnit::kVector));  // not stated
}

TEST(GpuDatasheet, AnalyzePeaksComeFromTheDatasheetOrSayWhy) {
  kernel::GpuInfo h200{"NVIDIA", "NVIDIA H200", "sm_90"};
  kernel::fill_peaks(h200);
  EXPECT_DOUBLE_EQ(h200.peak_tbps, 4.8);
  EXPECT_DOUBLE_EQ(h200.peak_tflops, 989);
  EXPECT_NE(h200.peaks_source.find("NVIDIA H200 Tensor Core GPU datasheet"), std::string::npos);
  kernel::GpuInfo gfx{"AMD", "gfx942", "gfx942"};  // rocminfo names only the architecture
  kernel::fill_peaks(gfx);
  EXPECT_DOUBLE_EQ(gfx.peak_tflops, 1307.4);
  kernel::GpuInfo mi250x{"AMD", "AMD Instinct MI250X", "gfx90a"};
  kernel::fill_peaks(mi250x);
  EXPECT_DOUBLE_EQ(mi250x.peak_tflops, 191.5);  // one GCD: half the package
  kernel::GpuInfo unknown{"NVIDIA", "NVIDIA RTX PRO 6000", "sm_120"};
  unknown.peak_tbps = 1.79;  // what detect_gpu derives from the driver
  kernel::fill_peaks(unknown);
  EXPECT_DOUBLE_EQ(unknown.peak_tbps, 1.79);
  EXPECT_EQ(unknown.peak_tflops, 0);
  EXPECT_NE(unknown.peaks_source.find("driver-reported"), std::string::npos)
      << unknown.peaks_source;
}

TEST(GpuDatasheet, DeviceBlockFallsBackToTheDriver) {
  DeviceStatus h200;
  h200.name = "NVIDIA H200";
  h200.memory_total = 150754820096ULL;
  auto j = device_datasheet_json(h200);
  EXPECT_EQ(j["figures_from"], "datasheet");
  EXPECT_EQ(j["entry"]["name"], "H200");
  EXPECT_EQ(j["entry"]["memory_bandwidth_tbps"]["source"], "NVIDIA H200 Tensor Core GPU datasheet");
  DeviceStatus other;
  other.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  other.max_mem_clock_mhz = 14001;
  other.memory_bus_width_bits = 512;
  j = device_datasheet_json(other);
  EXPECT_EQ(j["figures_from"], "driver");
  EXPECT_TRUE(j["entry"].is_null());
  EXPECT_NEAR(j["memory_bandwidth_tbps"].get<double>(), 1.792, 0.001);
  EXPECT_TRUE(j["peak_bf16_tflops"].is_null());
}

}  // namespace
}  // namespace magpie::gpu
