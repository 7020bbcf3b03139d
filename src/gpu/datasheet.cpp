#include "gpu/datasheet.hpp"

#include "gpu/name_match.hpp"

namespace magpie::gpu {
namespace {

// Vendor documents, by title. Tensor-core figures NVIDIA prints "with
// sparsity" are halved here (dense); each entry's note says so.
constexpr std::string_view kV100 = "NVIDIA Tesla V100 GPU Accelerator datasheet";
constexpr std::string_view kVoltaWp = "NVIDIA Tesla V100 GPU Architecture whitepaper (Volta)";
constexpr std::string_view kT4 = "NVIDIA T4 Tensor Core GPU datasheet";
constexpr std::string_view kTuringWp = "NVIDIA Turing GPU Architecture whitepaper";
constexpr std::string_view kA10 = "NVIDIA A10 Tensor Core GPU datasheet";
constexpr std::string_view kL4 = "NVIDIA L4 Tensor Core GPU datasheet";
constexpr std::string_view kL40S = "NVIDIA L40S GPU datasheet";
constexpr std::string_view kA100 = "NVIDIA A100 Tensor Core GPU datasheet";
constexpr std::string_view kAmpereWp = "NVIDIA A100 Tensor Core GPU Architecture whitepaper";
constexpr std::string_view kH100 = "NVIDIA H100 Tensor Core GPU datasheet";
constexpr std::string_view kHopperWp = "NVIDIA H100 Tensor Core GPU Architecture whitepaper";
constexpr std::string_view kH800 = "NVIDIA H800 Tensor Core GPU datasheet";
constexpr std::string_view kH20 =
    "NVIDIA HGX H20 specifications (as published by OEMs; NVIDIA posts no public datasheet)";
constexpr std::string_view kH200 = "NVIDIA H200 Tensor Core GPU datasheet";
constexpr std::string_view kGH200 = "NVIDIA GH200 Grace Hopper Superchip datasheet";
constexpr std::string_view kB200 = "NVIDIA HGX B200 datasheet (8-GPU figures / 8)";
constexpr std::string_view kGB200 = "NVIDIA GB200 NVL72 datasheet (72-GPU figures / 72)";
constexpr std::string_view kMI210 = "AMD Instinct MI210 Accelerator datasheet";
constexpr std::string_view kMI250X = "AMD Instinct MI250X Accelerator datasheet";
constexpr std::string_view kMI300X = "AMD Instinct MI300X Accelerator datasheet";
constexpr std::string_view kMI300A = "AMD Instinct MI300A APU datasheet";
constexpr std::string_view kMI325X = "AMD Instinct MI325X Accelerator datasheet";
constexpr std::string_view kMI350X = "AMD Instinct MI350X GPU datasheet";
constexpr std::string_view kMI355X = "AMD Instinct MI355X GPU datasheet";
constexpr std::string_view kGa102Wp = "NVIDIA Ampere GA102 GPU Architecture whitepaper";
constexpr std::string_view kAdaWp = "NVIDIA Ada GPU Architecture whitepaper";
constexpr std::string_view kGeForceSpecs =
    "NVIDIA GeForce product page specifications (cores, boost clock, memory)";
constexpr std::string_view kAdaDerived =
    "derived: SMs x boost clock x the RTX 4090's per-SM tensor rate (Ada whitepaper)";
// Product pages and workstation datasheets give CUDA cores, not SMs: 128 per
// GA10x/Ada SM. Where they give no boost clock, it is FP32 TFLOPS / (2 x cores).
constexpr std::string_view kSmsFromCores =
    "derived: CUDA cores on the vendor page / 128 per SM (no SM count is stated)";
constexpr std::string_view kClockFromFp32 =
    "derived: the datasheet's FP32 TFLOPS / (2 x CUDA cores) (no boost clock is stated)";
constexpr std::string_view kRtxA6000 = "NVIDIA RTX A6000 datasheet";
constexpr std::string_view kRtx6000Ada = "NVIDIA RTX 6000 Ada Generation datasheet";
// Each workstation datasheet prints one tensor figure (with sparsity); the other
// precisions follow from it by the architecture's fixed per-SM rate ratios.
constexpr std::string_view kRtxA6000Peaks =
    "derived: RTX A6000 datasheet's 309.7 tensor TFLOPS (FP16, sparse) halved; TF32 half and "
    "INT8 twice that (GA102 rate ratios)";
constexpr std::string_view kRtx6000AdaPeaks =
    "derived: RTX 6000 Ada datasheet's 1,457 tensor TFLOPS (FP8, sparse) halved; INT8 equal, "
    "FP16/BF16 half, TF32 a quarter (Ada rate ratios)";
constexpr std::string_view kA10G = "Amazon EC2 G5 instance specifications (NVIDIA A10G)";
// AWS states the A10G's memory size only. Its 600 GB/s is NVIDIA's A10 figure:
// the same GA102 board memory (24 GB GDDR6, 384-bit).
constexpr std::string_view kA10GBandwidth =
    "derived: NVIDIA A10 datasheet's 600 GB/s (same 24 GB GDDR6 384-bit memory); AWS states "
    "no bandwidth";
// The RTX 4060's AD107 GPU has eight PCIe lanes; NVIDIA's product page says "PCIe
// Gen 4" without the width (the driver reports x8 as the maximum link width).
constexpr std::string_view kRtx4060Link =
    "derived: PCIe Gen4 x8 (AD107 has 8 lanes; the product page states no width)";
constexpr std::string_view kNotStated = "not stated by the vendor";
// SM counts NVIDIA's datasheets leave out, as the CUDA driver reports them
// (cudaDeviceProp::multiProcessorCount, also Kineto's deviceProperties.numSms).
constexpr std::string_view kDriverReported =
    "CUDA driver (multiProcessorCount); the vendor datasheet does not state it";

Figure f(double v, std::string_view src) { return {v, src}; }
Figure unknown() { return {0, kNotStated}; }

using P = Precision;
constexpr ExecUnit M = ExecUnit::kMatrix;
constexpr ExecUnit V = ExecUnit::kVector;

struct Peak {
  Precision p;
  ExecUnit u;
  double tflops;
};

std::vector<PeakFigure> peaks(std::initializer_list<Peak> list, std::string_view src) {
  std::vector<PeakFigure> out;
  for (const auto& p : list) out.push_back({p.p, p.u, {p.tflops, src}});
  return out;
}

// Hopper SXM-class compute (H100 SXM, H200, GH200; H800 but for FP64).
// BF16/FP16 989: the datasheet's 1,979 with sparsity halved is 989.5; the
// Hopper whitepaper's dense figure is 989.4, which Magpie has always used as 989.
std::vector<PeakFigure> hopper_sxm_peaks(std::string_view src, double fp64, double fp64_tc) {
  return peaks({{P::kBf16, M, 989},
                {P::kFp16, M, 989},
                {P::kTf32, M, 494.5},
                {P::kFp8, M, 1979},
                {P::kInt8, M, 1979},
                {P::kFp64, M, fp64_tc},
                {P::kFp32, V, 67},
                {P::kFp64, V, fp64}},
               src);
}

// H100 NVL and H200 NVL (datasheet sparse figures halved).
std::vector<PeakFigure> hopper_nvl_peaks(std::string_view src) {
  return peaks({{P::kBf16, M, 835.5},
                {P::kFp16, M, 835.5},
                {P::kTf32, M, 417.5},
                {P::kFp8, M, 1670.5},
                {P::kInt8, M, 1670.5},
                {P::kFp64, M, 60},
                {P::kFp32, V, 60},
                {P::kFp64, V, 30}},
               src);
}

std::vector<PeakFigure> a100_peaks() {
  return peaks({{P::kBf16, M, 312},
                {P::kFp16, M, 312},
                {P::kTf32, M, 156},
                {P::kInt8, M, 624},
                {P::kFp64, M, 19.5},
                {P::kFp32, V, 19.5},
                {P::kFp64, V, 9.7}},
               kA100);
}

std::vector<PeakFigure> cdna3_peaks(std::string_view src) {  // MI300X, MI325X
  return peaks({{P::kBf16, M, 1307.4},
                {P::kFp16, M, 1307.4},
                {P::kFp8, M, 2614.9},
                {P::kInt8, M, 2614.9},
                {P::kTf32, M, 653.7},
                {P::kFp32, M, 163.4},
                {P::kFp64, M, 163.4},
                {P::kFp32, V, 163.4},
                {P::kFp64, V, 81.7}},
               src);
}

constexpr std::string_view kSparseHalved =
    "tensor-core figures are the datasheet's 'with sparsity' numbers halved (dense)";

GpuSpec nvidia(std::string name, std::vector<std::string> aliases, std::string arch, int major,
               int minor, std::string form) {
  GpuSpec s;
  s.name = std::move(name);
  s.aliases = std::move(aliases);
  s.vendor = Vendor::kNvidia;
  s.arch = std::move(arch);
  s.compute_major = major;
  s.compute_minor = minor;
  s.form_factor = std::move(form);
  s.boost_clock_mhz = unknown();
  s.tdp_w = unknown();
  s.interconnect_gbps = unknown();
  return s;
}

GpuSpec amd(std::string name, std::vector<std::string> aliases, std::string arch, int major,
            int minor) {
  GpuSpec s = nvidia(std::move(name), std::move(aliases), std::move(arch), major, minor, "OAM");
  s.vendor = Vendor::kAmd;
  return s;
}

void volta(std::vector<GpuSpec>& t) {
  auto v100 = [](std::string name, std::vector<std::string> aliases, std::string form,
                 double mem_gb, double clock, double tdp, double fp64, double fp32, double fp16,
                 std::string link, double link_gbps, std::string variant_of) {
    GpuSpec s = nvidia(std::move(name), std::move(aliases), "sm_70", 7, 0, std::move(form));
    s.variant_of = std::move(variant_of);
    s.compute_units = f(80, kVoltaWp);
    s.memory_gb = f(mem_gb, kV100);
    s.memory_type = "HBM2";
    s.memory_bandwidth_tbps = f(0.9, kV100);
    s.boost_clock_mhz = f(clock, kVoltaWp);
    s.tdp_w = f(tdp, kV100);
    s.interconnect = std::move(link);
    s.interconnect_gbps = f(link_gbps, kV100);
    s.peaks = peaks({{P::kFp16, M, fp16}, {P::kFp32, V, fp32}, {P::kFp64, V, fp64}}, kV100);
    s.note = "Volta tensor cores run FP16 only; the datasheet states no BF16/TF32/INT8 tensor peak";
    return s;
  };
  t.push_back(v100("V100", {"V100 SXM2", "V100-SXM2-32GB", "V100 SXM2 32GB"}, "SXM2", 32, 1530, 300,
                   7.8, 15.7, 125, "NVLink 2", 300, ""));
  t.push_back(v100("V100 SXM2 16GB", {"V100", "V100 SXM2", "V100-SXM2-16GB"}, "SXM2", 16, 1530, 300,
                   7.8, 15.7, 125, "NVLink 2", 300, ""));
  t.push_back(v100("V100 PCIe 32GB", {"V100 PCIe", "V100-PCIE-32GB"}, "PCIe", 32, 1380, 250, 7, 14,
                   112, "PCIe Gen3 x16", 32, "V100"));
  t.push_back(v100("V100 PCIe 16GB", {"V100 PCIe", "V100-PCIE-16GB"}, "PCIe", 16, 1380, 250, 7, 14,
                   112, "PCIe Gen3 x16", 32, "V100"));
}

void turing_ampere_ada(std::vector<GpuSpec>& t) {
  GpuSpec t4 = nvidia("T4", {"Tesla T4"}, "sm_75", 7, 5, "PCIe low-profile");
  t4.compute_units = f(40, kTuringWp);
  t4.memory_gb = f(16, kT4);
  t4.memory_type = "GDDR6";
  t4.memory_bandwidth_tbps = f(0.32, kT4);
  t4.boost_clock_mhz = f(1590, kTuringWp);
  t4.tdp_w = f(70, kT4);
  t4.interconnect = "PCIe Gen3 x16";
  t4.interconnect_gbps = f(32, kT4);
  t4.peaks = peaks({{P::kFp16, M, 65}, {P::kInt8, M, 130}, {P::kFp32, V, 8.1}}, kT4);
  t4.note = "FP16 is the datasheet's mixed-precision (FP16/FP32) tensor figure; no FP64 figure";
  t.push_back(std::move(t4));

  GpuSpec a10 = nvidia("A10", {"NVIDIA A10"}, "sm_86", 8, 6, "PCIe");
  a10.compute_units = f(72, kDriverReported);
  a10.memory_gb = f(24, kA10);
  a10.memory_type = "GDDR6";
  a10.memory_bandwidth_tbps = f(0.6, kA10);
  a10.tdp_w = f(150, kA10);
  a10.interconnect = "PCIe Gen4 x16";
  a10.interconnect_gbps = f(64, kA10);
  a10.peaks = peaks({{P::kBf16, M, 125},
                     {P::kFp16, M, 125},
                     {P::kTf32, M, 62.5},
                     {P::kInt8, M, 250},
                     {P::kFp32, V, 31.2}},
                    kA10);
  a10.note = std::string(kSparseHalved);
  t.push_back(std::move(a10));

  GpuSpec l4 = nvidia("L4", {"NVIDIA L4"}, "sm_89", 8, 9, "PCIe low-profile");
  l4.compute_units = f(58, kDriverReported);
  l4.memory_gb = f(24, kL4);
  l4.memory_type = "GDDR6";
  l4.memory_bandwidth_tbps = f(0.3, kL4);
  l4.tdp_w = f(72, kL4);
  l4.interconnect = "PCIe Gen4 x16";
  l4.interconnect_gbps = f(64, kL4);
  l4.peaks = peaks({{P::kBf16, M, 121},
                    {P::kFp16, M, 121},
                    {P::kTf32, M, 60},
                    {P::kFp8, M, 242.5},
                    {P::kInt8, M, 242.5},
                    {P::kFp32, V, 30.3}},
                   kL4);
  l4.note = std::string(kSparseHalved);
  t.push_back(std::move(l4));

  GpuSpec l40s = nvidia("L40S", {"NVIDIA L40S"}, "sm_89", 8, 9, "PCIe");
  l40s.compute_units = f(142, kDriverReported);
  l40s.memory_gb = f(48, kL40S);
  l40s.memory_type = "GDDR6";
  l40s.memory_bandwidth_tbps = f(0.864, kL40S);
  l40s.tdp_w = f(350, kL40S);
  l40s.interconnect = "PCIe Gen4 x16";
  l40s.interconnect_gbps = f(64, kL40S);
  l40s.peaks = peaks({{P::kBf16, M, 362.05},
                      {P::kFp16, M, 362.05},
                      {P::kTf32, M, 183},
                      {P::kFp8, M, 733},
                      {P::kInt8, M, 733},
                      {P::kFp32, V, 91.6}},
                     kL40S);
  l40s.note = "tensor-core figures are the datasheet's dense column";
  t.push_back(std::move(l40s));

  auto a100 = [](std::string name, std::vector<std::string> aliases, std::string form,
                 double mem_gb, std::string mem_type, double bw, double tdp, std::string link,
                 double link_gbps, std::string variant_of) {
    GpuSpec s = nvidia(std::move(name), std::move(aliases), "sm_80", 8, 0, std::move(form));
    s.variant_of = std::move(variant_of);
    s.compute_units = f(108, kAmpereWp);
    s.memory_gb = f(mem_gb, kA100);
    s.memory_type = std::move(mem_type);
    s.memory_bandwidth_tbps = f(bw, kA100);
    s.boost_clock_mhz = f(1410, kAmpereWp);
    s.tdp_w = f(tdp, kA100);
    s.interconnect = std::move(link);
    s.interconnect_gbps = f(link_gbps, kA100);
    s.peaks = a100_peaks();
    s.note = std::string(kSparseHalved) + "; FP64 matrix is the FP64 Tensor Core figure";
    return s;
  };
  t.push_back(a100(
      "A100", {"A100 SXM", "A100 SXM4", "A100-SXM4-80GB", "A100 SXM 80GB", "A100 80GB", "sm_80"},
      "SXM4", 80, "HBM2e", 2.039, 400, "NVLink 3", 600, ""));
  t.push_back(a100("A100 SXM 40GB", {"A100", "A100-SXM4-40GB", "A100 SXM4 40GB", "A100 40GB"},
                   "SXM4", 40, "HBM2", 1.555, 400, "NVLink 3", 600, ""));
  t.push_back(a100("A100 PCIe 80GB", {"A100 PCIe", "A100 80GB PCIe", "A100-PCIE-80GB"}, "PCIe", 80,
                   "HBM2e", 1.935, 300, "PCIe Gen4 x16 (NVLink bridge 600 GB/s)", 64, "A100"));
  t.push_back(a100("A100 PCIe 40GB", {"A100-PCIE-40GB", "A100 PCIe 40GB"}, "PCIe", 40, "HBM2",
                   1.555, 250, "PCIe Gen4 x16 (NVLink bridge 600 GB/s)", 64, "A100"));
}

// Workstation and consumer boards: GeForce figures with FP32 accumulate (what
// PyTorch's fp16/bf16 GEMMs use; GeForce tensor cores run it at half the FP16-
// accumulate rate the whitepapers also print), dense.
void workstation_and_geforce(std::vector<GpuSpec>& t) {
  struct Board {
    std::string name;
    std::vector<std::string> aliases;
    std::string arch;
    int minor;
    double sms, mem_gb;
    std::string mem_type;
    double bw_tbps, clock, tdp, fp32, bf16, tf32, fp8, int8;
    std::string_view peaks_src, board_src;
    std::string note;
    int pcie_lanes = 16;             // GB/s below: 4 per lane, both ways, as the other PCIe boards
    std::string_view link_src = {};  // board_src unless the link width is derived
    std::string_view sms_src = {};    // board_src unless the SM count is derived
    std::string_view clock_src = {};  // board_src unless the boost clock is derived
  };
  const std::string geforce =
      "GeForce: BF16/FP16 with FP32 accumulate (the FP16-accumulate figure is twice it), "
      "dense; FP8 with FP32 accumulate";
  const std::vector<Board> boards = {
      {"RTX 3090", {"GeForce RTX 3090"}, "sm_86", 6, 82, 24, "GDDR6X", 0.936, 1695, 350, 35.6,
       71, 35.6, 0, 284, kGa102Wp, kGa102Wp, geforce},
      {"RTX 4090", {"GeForce RTX 4090"}, "sm_89", 9, 128, 24, "GDDR6X", 1.008, 2520, 450, 82.6,
       165.2, 82.6, 330.3, 660.6, kAdaWp, kAdaWp, geforce},
      {"RTX 4090 D", {"GeForce RTX 4090 D", "RTX 4090D", "GeForce RTX 4090D"}, "sm_89", 9, 114, 24,
       "GDDR6X", 1.008, 2520, 425, 73.5, 147.1, 73.5, 294.2, 588.3, kAdaDerived, kGeForceSpecs,
       geforce + "; tensor peaks derived from the RTX 4090's per-SM rate (NVIDIA publishes none)",
       16, {}, kSmsFromCores},
      {"RTX 4080 SUPER", {"GeForce RTX 4080 SUPER"}, "sm_89", 9, 80, 16, "GDDR6X", 0.736, 2550,
       320, 52.2, 104.4, 52.2, 208.9, 417.8, kAdaDerived, kGeForceSpecs,
       geforce + "; tensor peaks derived from the RTX 4090's per-SM rate (INT8 matches NVIDIA's "
                 "836 sparse AI TOPS halved)",
       16, {}, kSmsFromCores},
      {"RTX 4060", {"GeForce RTX 4060"}, "sm_89", 9, 24, 8, "GDDR6", 0.272, 2460, 115, 15.1, 30.2,
       15.1, 60.5, 121, kAdaDerived, kGeForceSpecs,
       geforce + "; tensor peaks derived from the RTX 4090's per-SM rate (INT8 matches NVIDIA's "
                 "242 sparse AI TOPS halved)",
       8, kRtx4060Link, kSmsFromCores},
      {"RTX A6000", {"NVIDIA RTX A6000"}, "sm_86", 6, 84, 48, "GDDR6", 0.768, 1800, 300, 38.7,
       154.8, 77.4, 0, 309.7, kRtxA6000Peaks, kRtxA6000,
       std::string(kSparseHalved) + " (full-rate FP32 accumulate on the professional board)",
       16, {}, kSmsFromCores, kClockFromFp32},
      {"RTX 6000 Ada", {"RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation"}, "sm_89", 9,
       142, 48, "GDDR6", 0.96, 2505, 300, 91.1, 364.25, 182.1, 728.5, 728.5, kRtx6000AdaPeaks,
       kRtx6000Ada, std::string(kSparseHalved), 16, {}, kSmsFromCores, kClockFromFp32},
  };
  for (const auto& b : boards) {
    GpuSpec s = nvidia(b.name, b.aliases, b.arch, 8, b.minor, "PCIe");
    s.compute_units = f(b.sms, b.sms_src.empty() ? b.board_src : b.sms_src);
    s.memory_gb = f(b.mem_gb, b.board_src);
    s.memory_type = b.mem_type;
    s.memory_bandwidth_tbps = f(b.bw_tbps, b.board_src);
    s.boost_clock_mhz = f(b.clock, b.clock_src.empty() ? b.board_src : b.clock_src);
    s.tdp_w = f(b.tdp, b.board_src);
    s.interconnect = "PCIe Gen4 x" + std::to_string(b.pcie_lanes);
    s.interconnect_gbps = f(4.0 * b.pcie_lanes, b.link_src.empty() ? b.board_src : b.link_src);
    std::vector<Peak> list{{P::kBf16, M, b.bf16}, {P::kFp16, M, b.bf16}, {P::kTf32, M, b.tf32},
                           {P::kInt8, M, b.int8}};
    if (b.fp8 > 0) list.push_back({P::kFp8, M, b.fp8});
    for (const auto& p : list) s.peaks.push_back({p.p, p.u, {p.tflops, b.peaks_src}});
    s.peaks.push_back({P::kFp32, V, {b.fp32, b.board_src}});
    s.note = b.note;
    t.push_back(std::move(s));
  }

  // AWS's A10G: NVIDIA publishes no datasheet and AWS states memory only; no
  // compute peak is guessed (the roofline keeps its memory side).
  GpuSpec a10g = nvidia("A10G", {"NVIDIA A10G"}, "sm_86", 8, 6, "PCIe");
  a10g.compute_units = unknown();
  a10g.memory_gb = f(24, kA10G);
  a10g.memory_type = "GDDR6";
  a10g.memory_bandwidth_tbps = f(0.6, kA10GBandwidth);
  a10g.interconnect = "PCIe Gen4 x16";
  a10g.note = "no public compute peaks: pass them with --gpu-arch-file";
  t.push_back(std::move(a10g));
}

void hopper(std::vector<GpuSpec>& t) {
  GpuSpec h100 =
      nvidia("H100", {"H100 SXM", "H100 SXM5", "H100 SXM5 80GB", "H100 80GB HBM3", "sm_90"},
             "sm_90", 9, 0, "SXM5");
  h100.compute_units = f(132, kHopperWp);
  h100.memory_gb = f(80, kH100);
  h100.memory_type = "HBM3";
  h100.memory_bandwidth_tbps = f(3.35, kH100);
  h100.tdp_w = f(700, kH100);
  h100.interconnect = "NVLink 4";
  h100.interconnect_gbps = f(900, kH100);
  h100.peaks = hopper_sxm_peaks(kH100, 34, 67);
  h100.note = std::string(kSparseHalved) + " (BF16/FP16 989: the whitepaper's 989.4)";
  t.push_back(h100);

  GpuSpec pcie = nvidia("H100 PCIe", {"H100-PCIE-80GB"}, "sm_90", 9, 0, "PCIe");
  pcie.variant_of = "H100";
  pcie.compute_units = f(114, kHopperWp);
  pcie.memory_gb = f(80, kH100);
  pcie.memory_type = "HBM2e";
  pcie.memory_bandwidth_tbps = f(2.0, kH100);
  pcie.tdp_w = f(350, kH100);
  pcie.interconnect = "PCIe Gen5 x16 (NVLink bridge 600 GB/s)";
  pcie.interconnect_gbps = f(128, kH100);
  pcie.peaks = peaks({{P::kBf16, M, 756.5},
                      {P::kFp16, M, 756.5},
                      {P::kTf32, M, 378},
                      {P::kFp8, M, 1513},
                      {P::kInt8, M, 1513},
                      {P::kFp64, M, 51},
                      {P::kFp32, V, 51},
                      {P::kFp64, V, 26}},
                     kH100);
  pcie.note = std::string(kSparseHalved) + "; TDP is the top of the stated 300-350 W";
  t.push_back(std::move(pcie));

  GpuSpec nvl = nvidia("H100 NVL", {}, "sm_90", 9, 0, "PCIe (NVL)");
  nvl.variant_of = "H100";
  nvl.compute_units = f(132, kDriverReported);
  nvl.memory_gb = f(94, kH100);
  nvl.memory_type = "HBM3";
  nvl.memory_bandwidth_tbps = f(3.9, kH100);
  nvl.tdp_w = f(400, kH100);
  nvl.interconnect = "NVLink 4 bridge";
  nvl.interconnect_gbps = f(600, kH100);
  nvl.peaks = hopper_nvl_peaks(kH100);
  nvl.note = std::string(kSparseHalved) + "; TDP is the top of the stated 350-400 W";
  t.push_back(std::move(nvl));

  GpuSpec h800 = nvidia("H800", {"H800 SXM", "H800 SXM5", "H800 80GB HBM3"}, "sm_90", 9, 0, "SXM5");
  h800.compute_units = unknown();
  h800.memory_gb = f(80, kH800);
  h800.memory_type = "HBM3";
  h800.memory_bandwidth_tbps = f(3.35, kH800);
  h800.tdp_w = f(700, kH800);
  h800.interconnect = "NVLink 4 (reduced)";
  h800.interconnect_gbps = f(400, kH800);
  h800.peaks = hopper_sxm_peaks(kH800, 1, 1);
  h800.note = std::string(kSparseHalved) +
              "; H100 SXM compute with FP64 cut to 1 TFLOP/s and NVLink to 400 GB/s; SM count "
              "not stated (left unknown so properties never confuse it with H100)";
  t.push_back(std::move(h800));

  GpuSpec h20 = nvidia("H20", {"H20 HGX", "HGX H20"}, "sm_90", 9, 0, "SXM5");
  h20.compute_units = unknown();
  h20.memory_gb = f(96, kH20);
  h20.memory_type = "HBM3";
  h20.memory_bandwidth_tbps = f(4.0, kH20);
  h20.tdp_w = f(400, kH20);
  h20.interconnect = "NVLink 4";
  h20.interconnect_gbps = f(900, kH20);
  h20.peaks = peaks({{P::kBf16, M, 148},
                     {P::kFp16, M, 148},
                     {P::kTf32, M, 74},
                     {P::kFp8, M, 296},
                     {P::kInt8, M, 296},
                     {P::kFp64, M, 1},
                     {P::kFp32, V, 44},
                     {P::kFp64, V, 1}},
                    kH20);
  h20.note =
      "figures as OEM spec sheets print them (dense); NVIDIA publishes no H20 datasheet, so treat "
      "them as less certain and override with --gpu-arch-file when you know better";
  t.push_back(std::move(h20));

  GpuSpec h200 = nvidia("H200", {"H200 SXM", "H200 SXM 141GB", "sm_90"}, "sm_90", 9, 0, "SXM5");
  h200.compute_units = f(132, kDriverReported);
  h200.memory_gb = f(141, kH200);
  h200.memory_type = "HBM3e";
  h200.memory_bandwidth_tbps = f(4.8, kH200);
  h200.tdp_w = f(700, kH200);
  h200.interconnect = "NVLink 4";
  h200.interconnect_gbps = f(900, kH200);
  h200.peaks = hopper_sxm_peaks(kH200, 34, 67);
  h200.note = std::string(kSparseHalved) + " (BF16/FP16 989 as H100)";
  t.push_back(std::move(h200));

  GpuSpec h200nvl = nvidia("H200 NVL", {}, "sm_90", 9, 0, "PCIe (NVL)");
  h200nvl.variant_of = "H200";
  h200nvl.compute_units = f(132, kDriverReported);
  h200nvl.memory_gb = f(141, kH200);
  h200nvl.memory_type = "HBM3e";
  h200nvl.memory_bandwidth_tbps = f(4.8, kH200);
  h200nvl.tdp_w = f(600, kH200);
  h200nvl.interconnect = "NVLink 4 bridge (2- or 4-way)";
  h200nvl.interconnect_gbps = f(900, kH200);
  h200nvl.peaks = hopper_nvl_peaks(kH200);
  h200nvl.note = std::string(kSparseHalved);
  t.push_back(std::move(h200nvl));

  GpuSpec gh200 = nvidia("GH200", {"GH200 480GB", "GH200 96GB"}, "sm_90", 9, 0, "superchip");
  gh200.compute_units = f(132, kDriverReported);
  gh200.memory_gb = f(96, kGH200);
  gh200.memory_type = "HBM3";
  gh200.memory_bandwidth_tbps = f(4.0, kGH200);
  gh200.interconnect = "NVLink-C2C (to the Grace CPU)";
  gh200.interconnect_gbps = f(900, kGH200);
  gh200.peaks = hopper_sxm_peaks(kGH200, 34, 67);
  gh200.note = std::string(kSparseHalved) +
               "; '480GB' in the driver's name is the Grace CPU's LPDDR5X; the datasheet states "
               "power (450-1000 W) for the whole module only";
  t.push_back(gh200);

  GpuSpec gh200e = gh200;
  gh200e.name = "GH200 144GB";
  gh200e.aliases = {"GH200 144G HBM3e", "GH200 144GB HBM3e", "GH200 HBM3e"};
  gh200e.variant_of = "GH200";
  gh200e.memory_gb = f(144, kGH200);
  gh200e.memory_type = "HBM3e";
  gh200e.memory_bandwidth_tbps = f(4.9, kGH200);
  t.push_back(std::move(gh200e));
}

void blackwell(std::vector<GpuSpec>& t) {
  GpuSpec b200 =
      nvidia("B200", {"B200 HGX", "HGX B200", "DGX B200", "sm_100"}, "sm_100", 10, 0, "SXM6");
  b200.compute_units = f(148, kDriverReported);
  b200.memory_gb = f(180, kB200);
  b200.memory_type = "HBM3e";
  b200.memory_bandwidth_tbps = f(8.0, kB200);
  b200.interconnect = "NVLink 5";
  b200.interconnect_gbps = f(1800, kB200);
  b200.peaks = peaks({{P::kBf16, M, 2250},
                      {P::kFp16, M, 2250},
                      {P::kTf32, M, 1125},
                      {P::kFp8, M, 4500},
                      {P::kInt8, M, 4500},
                      {P::kFp64, M, 37},
                      {P::kFp64, V, 37}},
                     kB200);
  b200.note = std::string(kSparseHalved) +
              "; per-GPU shares of the 8-GPU board; no FP32 non-tensor or per-GPU TDP figure";
  t.push_back(std::move(b200));

  GpuSpec gb200 = nvidia("GB200", {"GB200 NVL72", "GB200 NVL"}, "sm_100", 10, 0, "superchip");
  gb200.compute_units = unknown();
  gb200.memory_gb = f(186, kGB200);
  gb200.memory_type = "HBM3e";
  gb200.memory_bandwidth_tbps = f(8.0, kGB200);
  gb200.interconnect = "NVLink 5";
  gb200.interconnect_gbps = f(1800, kGB200);
  gb200.peaks = peaks({{P::kBf16, M, 2500},
                       {P::kFp16, M, 2500},
                       {P::kTf32, M, 1250},
                       {P::kFp8, M, 5000},
                       {P::kInt8, M, 5000},
                       {P::kFp64, M, 45},
                       {P::kFp64, V, 45}},
                      kGB200);
  gb200.note = std::string(kSparseHalved) +
               "; per-GPU shares of the 72-GPU rack; power is stated per superchip/rack only";
  t.push_back(std::move(gb200));
}

void cdna(std::vector<GpuSpec>& t) {
  GpuSpec mi210 = amd("MI210", {"Instinct MI210"}, "gfx90a", 9, 0);
  mi210.form_factor = "PCIe";
  mi210.compute_units = f(104, kMI210);
  mi210.memory_gb = f(64, kMI210);
  mi210.memory_type = "HBM2e";
  mi210.memory_bandwidth_tbps = f(1.6384, kMI210);
  mi210.boost_clock_mhz = f(1700, kMI210);
  mi210.tdp_w = f(300, kMI210);
  mi210.interconnect = "Infinity Fabric Link";
  mi210.interconnect_gbps = f(300, kMI210);
  mi210.peaks = peaks({{P::kBf16, M, 181},
                       {P::kFp16, M, 181},
                       {P::kInt8, M, 181},
                       {P::kFp32, M, 45.3},
                       {P::kFp64, M, 45.3},
                       {P::kFp32, V, 22.6},
                       {P::kFp64, V, 22.6}},
                      kMI210);
  t.push_back(std::move(mi210));

  GpuSpec mi250x = amd("MI250X", {"Instinct MI250X", "MI250X/MI250", "gfx90a"}, "gfx90a", 9, 0);
  mi250x.devices_per_package = 2;
  mi250x.compute_units = f(220, kMI250X);
  mi250x.memory_gb = f(128, kMI250X);
  mi250x.memory_type = "HBM2e";
  mi250x.memory_bandwidth_tbps = f(3.2768, kMI250X);
  mi250x.boost_clock_mhz = f(1700, kMI250X);
  mi250x.tdp_w = f(500, kMI250X);
  mi250x.interconnect = "Infinity Fabric (8 links)";
  mi250x.interconnect_gbps = f(800, kMI250X);
  mi250x.peaks = peaks({{P::kBf16, M, 383},
                        {P::kFp16, M, 383},
                        {P::kInt8, M, 383},
                        {P::kFp32, M, 95.7},
                        {P::kFp64, M, 95.7},
                        {P::kFp32, V, 47.9},
                        {P::kFp64, V, 47.9}},
                       kMI250X);
  mi250x.note =
      "figures are per OAM package of two GCDs; the driver shows each GCD as one device "
      "(110 CUs, 64 GB), so per-device figures are half";
  t.push_back(std::move(mi250x));

  GpuSpec mi300x = amd("MI300X", {"Instinct MI300X", "MI300X OAM", "gfx942"}, "gfx942", 9, 4);
  mi300x.compute_units = f(304, kMI300X);
  mi300x.memory_gb = f(192, kMI300X);
  mi300x.memory_type = "HBM3";
  mi300x.memory_bandwidth_tbps = f(5.3, kMI300X);
  mi300x.boost_clock_mhz = f(2100, kMI300X);
  mi300x.tdp_w = f(750, kMI300X);
  mi300x.interconnect = "Infinity Fabric (7 links x 128 GB/s)";
  mi300x.interconnect_gbps = f(896, kMI300X);
  mi300x.peaks = cdna3_peaks(kMI300X);
  mi300x.note = "gfx942 alone names this entry (the more common part)";
  t.push_back(std::move(mi300x));

  GpuSpec mi300a = amd("MI300A", {"Instinct MI300A"}, "gfx942", 9, 4);
  mi300a.form_factor = "APU (SH5 socket)";
  mi300a.compute_units = f(228, kMI300A);
  mi300a.memory_gb = f(128, kMI300A);
  mi300a.memory_type = "HBM3 (unified with the CPU)";
  mi300a.memory_bandwidth_tbps = f(5.3, kMI300A);
  mi300a.boost_clock_mhz = f(2100, kMI300A);
  mi300a.tdp_w = f(550, kMI300A);
  mi300a.interconnect = "Infinity Fabric";
  mi300a.interconnect_gbps = unknown();
  mi300a.peaks = peaks({{P::kBf16, M, 980.6},
                        {P::kFp16, M, 980.6},
                        {P::kFp8, M, 1961.2},
                        {P::kInt8, M, 1961.2},
                        {P::kTf32, M, 490.3},
                        {P::kFp32, M, 122.6},
                        {P::kFp64, M, 122.6},
                        {P::kFp32, V, 122.6},
                        {P::kFp64, V, 61.3}},
                       kMI300A);
  mi300a.note = "TDP is the air-cooled 550 W (up to 760 W liquid-cooled)";
  t.push_back(std::move(mi300a));

  GpuSpec mi325x = amd("MI325X", {"Instinct MI325X", "MI325X OAM"}, "gfx942", 9, 4);
  mi325x.compute_units = f(304, kMI325X);
  mi325x.memory_gb = f(256, kMI325X);
  mi325x.memory_type = "HBM3e";
  mi325x.memory_bandwidth_tbps = f(6.0, kMI325X);
  mi325x.boost_clock_mhz = f(2100, kMI325X);
  mi325x.tdp_w = f(1000, kMI325X);
  mi325x.interconnect = "Infinity Fabric (7 links x 128 GB/s)";
  mi325x.interconnect_gbps = f(896, kMI325X);
  mi325x.peaks = cdna3_peaks(kMI325X);
  t.push_back(std::move(mi325x));

  auto cdna4 = [](std::string name, std::vector<std::string> aliases, std::string_view src,
                  double clock, double tdp, double bf16, double fp8, double fp32, double fp64) {
    GpuSpec s = amd(std::move(name), std::move(aliases), "gfx950", 9, 5);
    s.compute_units = f(256, src);
    s.memory_gb = f(288, src);
    s.memory_type = "HBM3e";
    s.memory_bandwidth_tbps = f(8.0, src);
    s.boost_clock_mhz = f(clock, src);
    s.tdp_w = f(tdp, src);
    s.interconnect = "Infinity Fabric (7 links x 153.6 GB/s)";
    s.interconnect_gbps = f(1075.2, src);
    s.peaks = peaks({{P::kBf16, M, bf16},
                     {P::kFp16, M, bf16},
                     {P::kFp8, M, fp8},
                     {P::kInt8, M, fp8},
                     {P::kFp32, M, fp32},
                     {P::kFp64, M, fp64},
                     {P::kFp32, V, fp32},
                     {P::kFp64, V, fp64}},
                    src);
    s.note = "CDNA 4 has no TF32 matrix path";
    return s;
  };
  t.push_back(
      cdna4("MI350X", {"Instinct MI350X", "gfx950"}, kMI350X, 2200, 1000, 2307, 4614, 144.2, 72.1));
  t.push_back(cdna4("MI355X", {"Instinct MI355X", "gfx950"}, kMI355X, 2400, 1400, 2516.6, 5033.2,
                    157.3, 78.6));
}

std::vector<GpuSpec> make_datasheet() {
  std::vector<GpuSpec> t;
  volta(t);
  turing_ampere_ada(t);
  workstation_and_geforce(t);
  hopper(t);
  blackwell(t);
  cdna(t);
  return t;
}

std::vector<NameCandidate> candidates() {
  std::vector<NameCandidate> out;
  // Per device: an MI250X GCD reports half its package's memory.
  for (const auto& s : datasheet()) {
    out.push_back({s.name, &s.aliases, s.memory_gb.value / s.devices_per_package});
  }
  return out;
}

}  // namespace

std::string_view to_string(Vendor v) { return v == Vendor::kAmd ? "amd" : "nvidia"; }

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::kFp64:
      return "fp64";
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kInt8:
      return "int8";
  }
  return "?";
}

std::optional<Precision> precision_from_string(std::string_view key) {
  for (auto p : {Precision::kFp64, Precision::kFp32, Precision::kTf32, Precision::kBf16,
                 Precision::kFp16, Precision::kFp8, Precision::kInt8}) {
    if (to_string(p) == key) return p;
  }
  return std::nullopt;
}

std::string_view to_string(ExecUnit u) { return u == ExecUnit::kMatrix ? "matrix" : "vector"; }

std::optional<Figure> GpuSpec::peak(Precision p, ExecUnit u) const {
  for (const auto& pk : peaks) {
    if (pk.precision == p && pk.unit == u) return pk.tflops;
  }
  return std::nullopt;
}

const std::vector<GpuSpec>& datasheet() {
  static const std::vector<GpuSpec> table = make_datasheet();
  return table;
}

SpecMatch find_spec_for_device(std::string_view device_name, int64_t memory_bytes) {
  static const std::vector<NameCandidate> cands = candidates();
  auto m = match_device_name(device_name, memory_bytes, cands,
                             "driver-reported values are used instead");
  if (!m.index) return {nullptr, m.reason};
  return {&datasheet()[*m.index], m.reason};
}

const GpuSpec* find_spec(std::string_view name_or_alias) {
  static const std::vector<NameCandidate> cands = candidates();
  auto hits = match_user_name(name_or_alias, cands);
  if (hits.size() != 1) return nullptr;
  return &datasheet()[hits.front()];
}

}  // namespace magpie::gpu
