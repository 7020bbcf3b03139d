// The roofline arch table: picking from real deviceProperties, --gpu-arch
// names, peak lookup per dtype, and --gpu-arch-file overrides.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/gpu_arch.hpp"
#include "core/error.hpp"

namespace magpie::analysis {
namespace {

const std::vector<GpuArch>& table() { return builtin_gpu_archs(); }

std::string picked(const ArchPick& p) { return p.arch ? p.arch->name : std::string("<none>"); }

TEST(GpuArchTable, HasTheDatasheetGpus) {
  for (const char* name :
       {"A100", "H100", "H200", "B200", "MI300X", "MI325X", "MI350X", "MI355X"}) {
    auto a = find_gpu_arch(name, table());
    ASSERT_TRUE(a) << name;
    EXPECT_GT(a->mem_bw_tbps, 0) << name;
    EXPECT_GT(a->mem_gb, 0) << name;
    EXPECT_GT(a->sm_count, 0) << name;
    EXPECT_GT(a->matrix_tflops.at("bf16"), 0) << name;
  }
  const auto h200 = *find_gpu_arch("H200", table());
  EXPECT_EQ(h200.vendor, "nvidia");
  EXPECT_DOUBLE_EQ(h200.mem_bw_tbps, 4.8);
  EXPECT_DOUBLE_EQ(h200.matrix_tflops.at("bf16"), 989);
  EXPECT_DOUBLE_EQ(h200.matrix_tflops.at("fp8"), 1979);
  EXPECT_DOUBLE_EQ(h200.vector_tflops.at("fp32"), 67);
  const auto mi300x = *find_gpu_arch("MI300X", table());
  EXPECT_EQ(mi300x.vendor, "amd");
  EXPECT_EQ(mi300x.compute_major, 9);
  EXPECT_EQ(mi300x.compute_minor, 4);
  EXPECT_EQ(mi300x.sm_count, 304);
  EXPECT_DOUBLE_EQ(mi300x.mem_bw_tbps, 5.3);
  // B200's datasheet gives no FP32 non-tensor figure: left out, not guessed.
  EXPECT_FALSE(find_gpu_arch("B200", table())->vector_tflops.contains("fp32"));
}

// deviceProperties as recorded in tests' shared traces.
TEST(GpuArchPick, H200ByName) {
  auto p = pick_gpu_arch("NVIDIA H200", 9, 0, 132, 150109880320, table());
  EXPECT_EQ(picked(p), "H200") << p.reason;
  EXPECT_NE(p.reason.find("NVIDIA H200"), std::string::npos);
}

TEST(GpuArchPick, H100ByName) {
  auto p = pick_gpu_arch("NVIDIA H100 80GB HBM3", 9, 0, 132, 85018279936, table());
  EXPECT_EQ(picked(p), "H100") << p.reason;
}

TEST(GpuArchPick, Mi300xByNameIncludingVirtualFunction) {
  EXPECT_EQ(picked(pick_gpu_arch("AMD Instinct MI300X", 9, 4, 304, 206141652992, table())),
            "MI300X");
  EXPECT_EQ(picked(pick_gpu_arch("AMD Instinct MI300X VF", 9, 4, 304, 205571227648, table())),
            "MI300X");
}

TEST(GpuArchPick, Mi300xWithEmptyNameByComputeProperties) {
  auto p = pick_gpu_arch("", 9, 4, 304, 206141652992, table());
  EXPECT_EQ(picked(p), "MI300X") << p.reason;
  EXPECT_NE(p.reason.find("9.4"), std::string::npos) << p.reason;
}

TEST(GpuArchPick, SameDieSeparatedByMemory) {
  EXPECT_EQ(picked(pick_gpu_arch("", 9, 0, 132, 150109880320, table())), "H200");
  EXPECT_EQ(picked(pick_gpu_arch("", 9, 0, 132, 85018279936, table())), "H100");
  EXPECT_EQ(picked(pick_gpu_arch("", 9, 4, 304, 256LL << 30, table())), "MI325X");
  // Unknown memory cannot separate H100 from H200.
  auto unknown = pick_gpu_arch("", 9, 0, 132, 0, table());
  EXPECT_FALSE(unknown.arch);
  EXPECT_NE(unknown.reason.find("H100"), std::string::npos) << unknown.reason;
  // MI350X and MI355X share CUs and memory: ambiguous, say so.
  auto gfx950 = pick_gpu_arch("", 9, 5, 256, 288LL << 30, table());
  EXPECT_FALSE(gfx950.arch);
  EXPECT_NE(gfx950.reason.find("MI355X"), std::string::npos) << gfx950.reason;
}

TEST(GpuArchPick, WholeWordNamesOnly) {
  // GH200 contains "H200" but not as a word: it gets its own entry, not H200's.
  auto p = pick_gpu_arch("NVIDIA GH200 480GB", 9, 0, 132, 102005473280, table());
  EXPECT_EQ(picked(p), "GH200") << p.reason;
  EXPECT_EQ(p.arch->mem_bw_tbps, 4.0);
  // "A10" is not "A100", "L4" not "L40S".
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA A10", 8, 6, 72, 24e9, table())), "A10");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA L4", 8, 9, 58, 24e9, table())), "L4");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA L40S", 8, 9, 142, 48e9, table())), "L40S");
}

TEST(GpuArchPick, BoardVariantsResolveToTheirOwnEntry) {
  auto pcie = pick_gpu_arch("NVIDIA H100 PCIe", 9, 0, 114, 85e9, table());
  EXPECT_EQ(picked(pcie), "H100 PCIe") << pcie.reason;
  EXPECT_DOUBLE_EQ(pcie.arch->matrix_tflops.at("bf16"), 756.5);
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA H100 NVL", 9, 0, 132, 100e9, table())), "H100 NVL");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA H200 NVL", 9, 0, 132, 150e9, table())), "H200 NVL");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA A100-SXM4-40GB", 8, 0, 108, 42314694656, table())),
            "A100 SXM 40GB");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA A100-SXM4-80GB", 8, 0, 108, 85174583296, table())),
            "A100");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA A100-PCIE-40GB", 8, 0, 108, 42314694656, table())),
            "A100 PCIe 40GB");
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA A100 80GB PCIe", 8, 0, 108, 85174583296, table())),
            "A100 PCIe 80GB");
  // The 40 GB SXM4 board's internal name, as in tests/data's HTA traces: memory decides.
  auto pg509 = pick_gpu_arch("NVIDIA A100-PG509-200", 8, 0, 108, 42297524224, table());
  EXPECT_EQ(picked(pg509), "A100 SXM 40GB") << pg509.reason;
  EXPECT_DOUBLE_EQ(pg509.arch->mem_bw_tbps, 1.555);
  // Unnamed: properties never pick a board that only its name tells apart.
  EXPECT_EQ(picked(pick_gpu_arch("", 9, 0, 132, 150109880320, table())), "H200");
}

TEST(GpuArchPick, RefusesBoardsTheTableLacks) {
  // An H800 PCIe is not described by the H800 (SXM) entry.
  auto pcie = pick_gpu_arch("NVIDIA H800 PCIe", 9, 0, 114, 85e9, table());
  EXPECT_FALSE(pcie.arch);
  EXPECT_NE(pcie.reason.find("PCIe"), std::string::npos) << pcie.reason;
  // Memory far from the entry's: a variant the table does not have.
  auto odd = pick_gpu_arch("NVIDIA H20", 9, 0, 78, 40e9, table());
  EXPECT_FALSE(odd.arch);
  EXPECT_NE(odd.reason.find("GiB"), std::string::npos) << odd.reason;
}

TEST(GpuArchPick, V100AndUnknownGpus) {
  EXPECT_EQ(picked(pick_gpu_arch("Tesla V100-SXM2-32GB", 7, 0, 80, 34e9, table())), "V100");
  EXPECT_EQ(picked(pick_gpu_arch("Tesla V100-SXM2-16GB", 7, 0, 80, 17e9, table())),
            "V100 SXM2 16GB");
  EXPECT_EQ(picked(pick_gpu_arch("Tesla V100-PCIE-32GB", 7, 0, 80, 34e9, table())),
            "V100 PCIe 32GB");
  auto named = pick_gpu_arch("Tesla P100-SXM2-16GB", 6, 0, 56, 17e9, table());
  EXPECT_FALSE(named.arch);
  EXPECT_NE(named.reason.find("--gpu-arch"), std::string::npos);
  auto unnamed = pick_gpu_arch("", 6, 0, 56, 17e9, table());
  EXPECT_FALSE(unnamed.arch);
  EXPECT_NE(unnamed.reason.find("6.0"), std::string::npos);
  EXPECT_FALSE(pick_gpu_arch("", 0, 0, 0, 0, table()).arch);
}

TEST(GpuArchFind, NamesAndAliases) {
  EXPECT_EQ(find_gpu_arch("h200", table())->name, "H200");
  EXPECT_EQ(find_gpu_arch("H200 SXM", table())->name, "H200");
  EXPECT_EQ(find_gpu_arch("h200-sxm", table())->name, "H200");
  EXPECT_EQ(find_gpu_arch("mi300x", table())->name, "MI300X");
  EXPECT_EQ(find_gpu_arch("Instinct MI300X", table())->name, "MI300X");
  EXPECT_EQ(find_gpu_arch("AMD Instinct MI355X", table())->name, "MI355X");
  EXPECT_EQ(find_gpu_arch("gfx942", table())->name, "MI300X");
  EXPECT_EQ(find_gpu_arch("sm_80", table())->name, "A100");
  EXPECT_EQ(find_gpu_arch("A100", table())->name, "A100");  // the name wins over a sibling's alias
  EXPECT_EQ(find_gpu_arch("NVIDIA H100 80GB HBM3", table())->name, "H100");
  EXPECT_EQ(find_gpu_arch("H100 NVL", table())->name, "H100 NVL");
  EXPECT_EQ(find_gpu_arch("v100", table())->name, "V100");
  EXPECT_FALSE(find_gpu_arch("sm_90", table()));   // H100 or H200
  EXPECT_FALSE(find_gpu_arch("gfx950", table()));  // MI350X or MI355X
  EXPECT_FALSE(find_gpu_arch("P100", table()));
  EXPECT_FALSE(find_gpu_arch("", table()));
}

TEST(GpuArchTable, Mi250xIsPerGcd) {
  // The driver shows each of the package's two GCDs as a device.
  const auto a = *find_gpu_arch("MI250X", table());
  EXPECT_EQ(a.sm_count, 110);
  EXPECT_DOUBLE_EQ(a.mem_gb, 64);
  EXPECT_DOUBLE_EQ(a.matrix_tflops.at("bf16"), 191.5);
}

TEST(GpuArchPeak, ByKinetoDtype) {
  const auto h200 = *find_gpu_arch("H200", table());
  EXPECT_EQ(peak_tflops(h200, "c10::BFloat16", true), 989);
  EXPECT_EQ(peak_tflops(h200, "c10::Half", true), 989);
  EXPECT_EQ(peak_tflops(h200, "c10::Float8_e4m3fn", true), 1979);
  EXPECT_EQ(peak_tflops(h200, "double", false), 34);
  // fp32 GEMMs run on CUDA cores without TF32: the vector peak.
  EXPECT_EQ(peak_tflops(h200, "float", true), 67);
  // bf16 elementwise computes in fp32.
  EXPECT_EQ(peak_tflops(h200, "c10::BFloat16", false), 67);
  EXPECT_FALSE(peak_tflops(h200, "long int", false));
  EXPECT_FALSE(peak_tflops(h200, "Scalar", true));

  const auto mi300x = *find_gpu_arch("MI300X", table());
  EXPECT_EQ(peak_tflops(mi300x, "float", true), 163.4);
  EXPECT_EQ(peak_tflops(mi300x, "c10::Float8_e4m3fnuz", true), 2614.9);
  const auto b200 = *find_gpu_arch("B200", table());
  EXPECT_FALSE(peak_tflops(b200, "c10::BFloat16", false));  // no vector figure known

  EXPECT_EQ(compute_spec("c10::BFloat16", true), "matrix_bf16");
  EXPECT_EQ(compute_spec("float", false), "vector_fp32");
  EXPECT_EQ(compute_spec("long int", false), "");
  EXPECT_EQ(precision_key("c10::Float8_e5m2"), "fp8");
}

TEST(GpuArchFile, TraceLensFormatOverridesBuiltin) {
  const std::string tracelens = R"({
    "name": "MI300X", "mem_bw_gbps": 5300, "freq_mhz": 2100, "_reference": "maf blog",
    "max_achievable_tflops": {"matrix_bf16": 708, "matrix_fp16": 654, "vector_fp32": 81}
  })";
  auto t = parse_gpu_arch_json(tracelens, "mi300x.json", table());
  ASSERT_EQ(t.size(), table().size());
  const auto a = *find_gpu_arch("MI300X", t);
  EXPECT_DOUBLE_EQ(a.mem_bw_tbps, 5.3);
  EXPECT_DOUBLE_EQ(a.matrix_tflops.at("bf16"), 708);
  EXPECT_DOUBLE_EQ(a.matrix_tflops.at("fp16"), 654);
  EXPECT_DOUBLE_EQ(a.vector_tflops.at("fp32"), 81);
  EXPECT_DOUBLE_EQ(a.matrix_tflops.at("fp8"), 2614.9);  // untouched
  EXPECT_EQ(a.sm_count, 304);
}

TEST(GpuArchFile, ListAddsAndOverridesByAlias) {
  const std::string list = R"([
    {"name": "H20E", "vendor": "nvidia", "compute_major": 9, "compute_minor": 0,
     "sm_count": 78, "mem_bw_tbps": 4.0, "mem_gb": 141, "matrix_tflops": {"bf16": 148},
     "vector_tflops": {"fp32": 44}, "aliases": ["H20E HGX"]},
    {"name": "h200 sxm", "mem_bw_tbps": 4.5},
    {"name": "MI308X", "arch": "gfx942x", "mem_bw_gbps": 5300, "num_cus": 80}
  ])";
  auto t = parse_gpu_arch_json(list, "archs.json", table());
  ASSERT_EQ(t.size(), table().size() + 2);
  EXPECT_DOUBLE_EQ(find_gpu_arch("H200", t)->mem_bw_tbps, 4.5);
  EXPECT_EQ(picked(pick_gpu_arch("NVIDIA H20E", 9, 0, 78, 150e9, t)), "H20E");
  EXPECT_EQ(find_gpu_arch("H20E HGX", t)->name, "H20E");
  EXPECT_EQ(find_gpu_arch("H20E", t)->source, "archs.json");
  EXPECT_EQ(find_gpu_arch("H200", t)->source, "Magpie datasheet, overridden by archs.json");
  const auto mi308 = *find_gpu_arch("gfx942x", t);
  EXPECT_EQ(mi308.name, "MI308X");
  EXPECT_EQ(mi308.sm_count, 80);
  EXPECT_DOUBLE_EQ(mi308.mem_bw_tbps, 5.3);
}

void expect_bad(const std::string& text, const std::string& mentions) {
  try {
    parse_gpu_arch_json(text, "bad.json", builtin_gpu_archs());
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST(GpuArchFile, ErrorsNameTheField) {
  expect_bad("{not json", "JSON");
  expect_bad(R"({"mem_bw_tbps": 3})", "name");
  expect_bad(R"([{"name": "H200"}, 5])", "entry 1");
  expect_bad(R"({"name": "H200", "mem_bw_gbps": "fast"})", "mem_bw_gbps");
  expect_bad(R"({"name": "H200", "matrix_tflops": {"bf16": -1}})", "matrix_tflops.bf16");
  expect_bad(R"({"name": "H200", "max_achievable_tflops": {"matirx_bf16": 700}})", "matirx_bf16");
  expect_bad(R"({"name": "NewGPU", "matrix_tflops": {"bf16": 100}})", "mem_bw_tbps");
  expect_bad(R"({"name": "H200", "sm_count": 1.5})", "sm_count");
  expect_bad(R"({"name": "sm_90", "mem_bw_tbps": 1})", "ambiguous");
}

TEST(GpuArchFile, LoadsFromDisk) {
  const auto dir = std::filesystem::temp_directory_path() / "magpie_gpu_arch_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / "h200.json";
  std::ofstream(path) << R"({"name": "H200", "matrix_tflops": {"bf16": 790}})";
  auto t = load_gpu_arch_file(path, builtin_gpu_archs());
  EXPECT_DOUBLE_EQ(find_gpu_arch("H200", t)->matrix_tflops.at("bf16"), 790);
  try {
    load_gpu_arch_file(dir / "missing.json", builtin_gpu_archs());
    ADD_FAILURE() << "missing file accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magpie::analysis
