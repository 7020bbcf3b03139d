#pragma once
// Kernel jobs: `analyze` (each implementation through compile → correctness →
// performance) and `compare` (the same, interleaved, ranked against the
// explicit baseline with verdicts), as one typed call for the CLI and the
// MCP tools.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/job_context.hpp"
#include "kernel/cupti_choice.hpp"
#include "kernel/evaluation.hpp"
#include "gpu/environment.hpp"
#include "gpu/gpu_monitor.hpp"
#include "gpu/gpu_selection.hpp"
#include "kernel/gpu_info.hpp"
#include "kernel/kernel_config.hpp"
#include "kernel/ranking.hpp"
#include "kernel/verdict.hpp"

namespace magpie::jobs {

// Where the implementations come from: files with shared settings (ids from
// the file stems), a kernel YAML, or both merged the way Magpie merges them.
struct KernelSources {
  std::vector<std::string> files;
  std::string kernel_config;      // -k YAML
  std::string type = "hip";
  // One command for all files, or (MCP's testcase_commands) one per file.
  std::vector<std::string> testcases;
  std::string compile_command;
  std::string working_dir;        // "" = each file's folder
};

// Settings a face may override over the YAML's.
struct KernelOverrides {
  int rounds = 0;          // 0 = the YAML's (default 5)
  double threshold = -1;   // <0 = the YAML's (default 0.02)
  bool ncu = false;
  std::string kernel_filter;
  std::string cupti_kind;  // "" = the YAML's (default auto)
  std::string latency_method = "auto";
  double latency_rep_ms = -1;  // <0 = the YAML's latency.rep_ms (default 20)
};

struct KernelEvaluationRequest {
  bool compare = false;
  KernelSources sources;
  KernelOverrides overrides;
  size_t baseline = 0;
  bool check_performance = true;
  bool check_latency = true;
  bool fail_on_regression = false;
  bool strict = false;  // unknown kernel-YAML keys are errors
  std::filesystem::path output_dir = "./results";
  bool verbose = false;  // per-stage lines on stderr
};

struct KernelEvaluationOutcome {
  bool compare = false;
  kernel::GpuInfo gpu;
  gpu::EnvironmentSnapshot environment;  // the report's environment block
  // The kernel YAML's gpu_selection / gpu_monitor, when it asked for them.
  std::optional<gpu::GpuSelectionRecord> gpu_selection;
  std::optional<gpu::GpuMonitorSummary> gpu_monitor;
  std::vector<kernel::Evaluation> evaluations;
  std::optional<kernel::Ranking> ranking;  // compare only
  kernel::VerdictSettings verdict_settings;
  kernel::CuptiChoice cupti;
  std::string timestamp;  // ISO, as in the report
  std::filesystem::path workspace;
  std::filesystem::path report_path;  // analyze_report.json | compare_report.json
  std::vector<std::string> warnings;
  bool all_correct = false;
  bool regression = false;  // a candidate SLOWER than the baseline beyond noise
  bool cancelled = false;
  // Why performance was not measured although asked for (no GPU to time on),
  // "" when it was or --no-perf said not to.
  std::string performance_not_measured;
  int64_t run_id = 0;
  // Magpie's exit status: 1 if any implementation is not correct, or a
  // regression under fail_on_regression; kExitPerformanceNotMeasured when all
  // are correct but timing could not run.
  int exit_code() const;
};

// README "Exit codes": correctness was checked, performance could not be measured.
inline constexpr int kExitPerformanceNotMeasured = 8;

// The request with every path the caller gave (output_dir, kernel config,
// kernel files, working_dir) made absolute against `caller_dir`, the caller's
// working folder. Children run in the kernels' folders: a relative -o would
// name a different place (one that does not exist) for each of them.
KernelEvaluationRequest with_absolute_paths(KernelEvaluationRequest request, const std::filesystem::path& caller_dir);

// Why performance timing cannot run on this machine, "" when it can: `gpu`
// names none, and an implementation is timed on one — by the built-in Python
// harness (a bench_target) or as compiled CUDA/HIP code. A Python entry timed
// by its own testcase or prof_command may run anywhere. All or none: compare
// needs every implementation timed alike. `why_no_gpu` is the driver's note.
std::string why_timing_cannot_run(const kernel::GpuInfo& gpu, const std::string& why_no_gpu,
                                  const std::vector<kernel::KernelSpec>& kernels);

// The kernel config the request describes (YAML loaded, files added, flags
// applied). Throws Error(kUsage) naming the fix for an empty or inconsistent
// request: no kernels, compare with fewer than two, analyze of files without
// a testcase, a baseline out of range, a testcase count that fits neither one
// nor each file.
kernel::KernelConfig resolve_kernel_config(const KernelEvaluationRequest& request,
                                           const kernel::GpuInfo& gpu);

KernelEvaluationOutcome evaluate_kernels(const KernelEvaluationRequest& request,
                                         const JobContext& context);

// analyze_report.json or compare_report.json, as written.
nlohmann::json report_json(const KernelEvaluationOutcome& outcome);
// The Markdown table and notes `magpie analyze|compare` print on stdout.
std::string console_text(const KernelEvaluationOutcome& outcome);
// Per-implementation errors, one line each, for stderr.
std::string error_text(const KernelEvaluationOutcome& outcome);

}  // namespace magpie::jobs
