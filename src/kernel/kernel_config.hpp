#pragma once
// The kernel config (`magpie analyze|compare -k kernel.yaml`), per
// docs/MAGPIE_COMPATIBILITY.md §2: Magpie's keys with Magpie's defaults, plus our own
// measurement settings (documented in docs/KERNEL_EVALUATION.md).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu_monitor.hpp"
#include "gpu/gpu_selection.hpp"
#include "kernel/command.hpp"

namespace magpie::kernel {

enum class KernelType { kHip, kCuda, kPytorch, kTriton };

// hip|cuda|pytorch|torch|py|triton, case-insensitive; throws Error(kUsage) otherwise.
KernelType parse_kernel_type(std::string_view text, const std::string& origin = {});
const char* to_string(KernelType type);
inline bool is_python_type(KernelType t) { return t == KernelType::kPytorch || t == KernelType::kTriton; }

// A Python callable the built-in harness (python/magpie_bench) checks and times.
struct BenchTarget {
  std::string module;
  std::string callable;
  std::string get_inputs = "get_inputs";
  bool empty() const { return module.empty(); }
};

struct KernelSpec {
  std::string id = "kernel";
  KernelType type = KernelType::kHip;
  std::vector<std::filesystem::path> source_files;  // absolute after loading
  std::filesystem::path working_dir;                 // absolute after loading
  std::map<std::string, std::string> env;
  CommandList testcase_command;
  CommandList compile_command;
  CommandList prof_command;  // replaces the built-in profiler run
  BenchTarget bench_target;
  std::string get_inputs_func;
  std::string get_init_inputs_func;
  // Ours: the least work the implementation must do, for the roofline floor.
  double min_bytes = 0;
  double min_flops = 0;
};

struct PerformanceSettings {
  std::string backend;  // "" = by type (HIP → rocprof_compute, CUDA → ncu)
  int timeout_seconds = 300;
  std::vector<std::string> ncu_args;
  std::vector<std::string> ncu_metrics;
  bool ncu_pass = false;  // ours: one extra ncu run for DRAM bytes / FLOPs
  // Ours: measurement and verdicts.
  int rounds = 5;                 // interleaved rounds of the performance run, when rounds_exact
  // Ours: `rounds` given (YAML or --rounds) means exactly that many; otherwise a
  // compare runs min_rounds, then more until every candidate's verdict is settled
  // (not AMBIGUOUS), at most max_rounds (performance_rounds.hpp).
  bool rounds_exact = false;
  int min_rounds = 3;
  int max_rounds = 10;
  double threshold = 0.02;        // practical-equivalence band for SAME (±2%)
  int bootstrap_resamples = 2000;
  uint64_t bootstrap_seed = 42;
  double confidence = 0.95;
  double peak_tbps = 0;    // 0 = from the detected GPU
  double peak_tflops = 0;  // 0 = from the detected GPU
  double floor_tolerance = 0.9;  // reject medians below floor × this
  // How libmagpie_cupti.so times kernels (MAGPIE_CUPTI_KIND): concurrent, serial,
  // or auto = a probe round decides (kernel/cupti_choice.hpp).
  std::string cupti_kind = "auto";
};

struct CorrectnessSettings {
  std::string backend = "testcase";  // testcase|accordo
  double atol = 1e-6;                // accordo defaults
  double rtol = 1e-5;
  bool equal_nan = false;
  int accordo_timeout_seconds = 30;
  bool tolerances_set = false;  // else the harness uses dtype-aware defaults
  int timeout_seconds = 300;    // ours: per correctness command
  int seeds = 3;                // ours: fresh random inputs per seed
};

struct LatencySettings {
  bool enabled = true;
  std::string method = "auto";
  std::string primary_metric = "kernel_median_ms";
  double rep_ms = 20;
  int n_retries = 5;
  int estimate_reps = 5;
  int warmup_iters = 5;
  uint64_t seed = 42;
  std::string kernel_filter;  // regex on kernel names ("" = all)
  BenchTarget bench_target;
  std::vector<std::string> pythonpath;
  // Ours: the interpreter that runs the harness ("" = python3 on PATH;
  // $MAGPIE_PYTHON wins). A relative path resolves against the YAML's folder.
  std::string python;
  int timeout_seconds = 120;
  // Ours: nvbench-style stopping for the built-in timing loop.
  double max_noise = 0.005;
  int min_samples = 10;
  double min_time_s = 0.2;  // GPU time per round; by default >= 3 rounds, so >= 0.6 s per implementation
  double max_time_s = 15;
  bool l2_flush = true;
};

struct KernelConfig {
  std::vector<KernelSpec> kernels;
  PerformanceSettings performance;
  CorrectnessSettings correctness;
  LatencySettings latency;
  // Top-level `gpu_selection:` (the benchmark YAML's keys): which GPU(s) every
  // build, correctness and timing command sees, locked for the run. Absent:
  // the commands see what the shell gives them. Count defaults to 1 here.
  std::optional<gpu::GpuSelectionConfig> gpu_selection;
  // Top-level `gpu_monitor:` ({enabled, interval_sec}); sampling is finer than
  // the benchmark's 2 s because a kernel run lasts seconds, not minutes.
  gpu::GpuMonitorConfig gpu_monitor{false, 0.5};
  std::string environment = "local";
  std::filesystem::path origin;       // the YAML file, when loaded from one
  std::vector<std::string> warnings;  // unknown keys and similar
  std::vector<std::string> unknown_keys;  // also in warnings; errors under --strict
};

// Parses YAML text; relative paths resolve against `base_dir`. Throws
// Error(kBadFormat) for malformed YAML, Error(kUsage) for bad values, naming
// `origin`, the key and the fix.
KernelConfig parse_kernel_config(std::string_view yaml_text, const std::string& origin,
                                 const std::filesystem::path& base_dir,
                                 const VarLookup& lookup = environment_lookup());

// Reads and parses a file; relative paths resolve against its folder.
KernelConfig load_kernel_config(const std::filesystem::path& path,
                                const VarLookup& lookup = environment_lookup());

}  // namespace magpie::kernel
