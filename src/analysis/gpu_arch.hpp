#pragma once
// The roofline's hardware side: peak FLOP/s per precision and memory bandwidth
// for the GPUs Magpie knows, how to recognise them from a trace's
// deviceProperties, and how users override or extend the table.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::analysis {

struct GpuArch {
  std::string name;    // "H200", "MI300X", ...
  std::string vendor;  // "nvidia" | "amd" | "" (unknown, user entries)
  // NVIDIA compute capability, or AMD gfx major.minor as Kineto reports it
  // (MI300X = gfx942 → 9.4); sm_count is SMs or CUs.
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  double mem_bw_tbps = 0;  // TB/s (10^12 bytes per second)
  double mem_gb = 0;       // as the vendor states it; compared against GiB
  // Dense peaks in TFLOP/s keyed by precision: "bf16", "fp16", "fp8", "fp4",
  // "fp32", "tf32", "fp64", "int8". Absent = not known.
  std::map<std::string, double> matrix_tflops;
  std::map<std::string, double> vector_tflops;
  // Other spellings accepted by find_gpu_arch and name matching
  // ("H200 SXM", "gfx942", "sm_80").
  std::vector<std::string> aliases;
  // A board told apart from a sibling only by its name (H100 PCIe, H200 NVL):
  // never picked from compute properties alone.
  bool board_variant = false;
  std::string source;  // "Magpie datasheet" or the --gpu-arch-file that added it
};

// gpu::datasheet() in the roofline's shape, per device (docs/GPU_DATASHEET.md).
const std::vector<GpuArch>& builtin_gpu_archs();

struct ArchPick {
  std::optional<GpuArch> arch;
  std::string reason;  // why this one, or why none
};

// Picks the arch for one Kineto deviceProperties entry. A non-empty name is
// matched by gpu::match_device_name ("NVIDIA H100 80GB HBM3" → H100); an empty name falls back to (major, minor, SM count), using total
// memory to separate GPUs that share a die (H100 vs H200, MI300X vs MI325X).
// total_global_mem_bytes <= 0 means unknown.
ArchPick pick_gpu_arch(std::string_view device_name, int compute_major, int compute_minor,
                       int sm_count, int64_t total_global_mem_bytes,
                       const std::vector<GpuArch>& table);

// For --gpu-arch NAME: case-insensitive, ignores spaces/dashes/underscores
// ("h200", "H200 SXM", "mi300x", "gfx942"). Ambiguous aliases ("sm_90",
// "gfx950") and unknown names give nullopt.
std::optional<GpuArch> find_gpu_arch(std::string_view name_or_alias,
                                     const std::vector<GpuArch>& table);

// For --gpu-arch-file: a JSON object or a list of them. Each entry overrides
// the fields it names on a matching entry of `base` (by name or alias) or is
// appended as a new GPU. Accepts Magpie's keys (the GpuArch field names) and
// TraceLens's (mem_bw_gbps, memory_gb, num_cus, max_achievable_tflops with
// "matrix_bf16"/"vector_fp32" keys, arch/gfx_arch as an alias).
// Throws magpie::Error(kBadFormat) naming the entry and field.
std::vector<GpuArch> load_gpu_arch_file(const std::filesystem::path& path,
                                        std::vector<GpuArch> base);
// The same, from JSON text already in memory; `origin` names it in errors.
std::vector<GpuArch> parse_gpu_arch_json(std::string_view json_text, const std::string& origin,
                                         std::vector<GpuArch> base);

// Precision key for a Kineto dtype string: "c10::BFloat16" → "bf16",
// "float" → "fp32", "c10::Float8_e4m3fn" → "fp8", ... nullopt when unknown.
std::optional<std::string> precision_key(std::string_view kineto_dtype);

// TraceLens's "compute_spec" label: "matrix_bf16", "vector_fp32"; "" if unknown dtype.
std::string compute_spec(std::string_view kineto_dtype, bool matrix);

// Peak TFLOP/s for work of this dtype on the matrix (GEMM/attention/conv) or
// vector (elementwise/reduction/norm) units. Fallbacks, both because that is
// where PyTorch runs the work: an fp32 matrix op without an fp32 matrix peak
// uses the fp32 vector peak (NVIDIA runs fp32 GEMMs on CUDA cores unless TF32
// is enabled); a vector op on a 16-bit/8-bit dtype without its own peak uses
// the fp32 vector peak (PyTorch elementwise kernels compute in fp32).
std::optional<double> peak_tflops(const GpuArch& arch, std::string_view kineto_dtype, bool matrix);

}  // namespace magpie::analysis
