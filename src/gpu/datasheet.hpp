#pragma once
// Magpie's one GPU datasheet: what each GPU Magpie knows can do on paper,
// every figure with the vendor document it comes from. `--gpu-info`, the
// roofline (analysis::builtin_gpu_archs), analyze's peaks (kernel::fill_peaks)
// and MCP hardware_spec all read this table; docs/GPU_DATASHEET.md lists it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::gpu {

enum class Vendor : uint8_t { kNvidia, kAmd };
std::string_view to_string(Vendor v);  // "nvidia" | "amd"

enum class Precision : uint8_t { kFp64, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };
std::string_view to_string(Precision p);  // "fp64", "fp32", "tf32", "bf16", ...
std::optional<Precision> precision_from_string(std::string_view key);

// Where the work runs: tensor/matrix cores, or the CUDA cores / SIMD units.
enum class ExecUnit : uint8_t { kMatrix, kVector };
std::string_view to_string(ExecUnit u);  // "matrix" | "vector"

// One number and the document it is read from (a title, not a link: links rot).
// value 0 = the vendor does not state it; source then says why it is absent.
struct Figure {
  double value = 0;
  std::string_view source;
  bool known() const { return value > 0; }
};

struct PeakFigure {
  Precision precision;
  ExecUnit unit;
  Figure tflops;  // dense (no structured sparsity), TFLOP/s or TOP/s for int8
};

struct GpuSpec {
  std::string name;                  // canonical: "H100" (the SXM board), "H100 PCIe", "MI300X"
  std::vector<std::string> aliases;  // whole-word patterns as drivers and traces spell them
  Vendor vendor = Vendor::kNvidia;
  std::string arch;       // "sm_90", "gfx942"
  int compute_major = 0;  // NVIDIA compute capability, AMD gfx major.minor (gfx942 → 9.4)
  int compute_minor = 0;
  std::string form_factor;  // "SXM5", "PCIe", "OAM", "superchip", ...
  // Set on boards that share die, name stem and SM count with a main entry
  // ("H200 NVL" → "H200"): they are told apart by name only, never by properties.
  std::string variant_of;
  // A package the driver shows as several devices (MI250X: two GCDs). Figures
  // below are per package, as the datasheet states them.
  int devices_per_package = 1;
  Figure compute_units;     // SMs (NVIDIA) or CUs (AMD)
  Figure memory_gb;         // as the vendor states it (GB, compared against GiB)
  std::string memory_type;  // "HBM3", "GDDR6", ...
  Figure memory_bandwidth_tbps;
  Figure boost_clock_mhz;  // max SM / peak engine clock
  Figure tdp_w;
  std::string interconnect;  // "NVLink 4", "Infinity Fabric", "PCIe Gen4 x16"
  Figure interconnect_gbps;  // GB/s per GPU, as the vendor states it
  std::vector<PeakFigure> peaks;
  std::string note;  // what is derived (sparse/2, per-GPU share), or left out

  std::optional<Figure> peak(Precision p, ExecUnit u) const;
};

// The built-in table, one entry per board (A100 SXM 80GB and A100 PCIe 40GB are two).
const std::vector<GpuSpec>& datasheet();

struct SpecMatch {
  const GpuSpec* spec = nullptr;  // nullptr: unknown or ambiguous
  std::string reason;             // why this entry, or why none (and what to do)
};

// For a name as a driver or a trace spells it ("NVIDIA H100 80GB HBM3",
// "Tesla V100-SXM2-32GB", "AMD Instinct MI300X VF"). memory_bytes (<= 0 =
// unknown) separates boards that share a name ("NVIDIA A100-PG509-200" is
// the 40 GB SXM4 part).
SpecMatch find_spec_for_device(std::string_view device_name, int64_t memory_bytes = 0);

// For a name a user types ("h200", "H100 NVL", "mi300x", "gfx942"): exact
// (normalised) name or alias, else a driver-style match. nullptr if unknown or ambiguous.
const GpuSpec* find_spec(std::string_view name_or_alias);

}  // namespace magpie::gpu
