#include "analyze_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "command_context.hpp"
#include "core/error.hpp"
#include "html/html_reports.hpp"
#include "jobs/kernel_jobs.hpp"

namespace magpie::app {

namespace fs = std::filesystem;
using namespace magpie::kernel;

void AnalyzeCommand::add_common(CLI::App* sub, Flags& f, bool compare) {
  sub->add_option("kernel_files", f.files, "Kernel source files (id = file stem)");
  sub->add_option("-k,--kernel-config", f.kernel_config, "Kernel config YAML (kernel:/kernels:)")->check(CLI::ExistingFile);
  sub->add_option("-t,--testcase", f.testcase, "Command that runs and checks the kernel (exit 0 = correct)");
  sub->add_option("--type", f.type, "Kernel type: hip, cuda, pytorch, triton")->capture_default_str();
  sub->add_option("--compile-cmd", f.compile_cmd, "Build command (default: nvcc/hipcc for the detected GPU)");
  sub->add_flag("--no-perf", f.no_perf, "Skip the performance stage");
  sub->add_flag("--no-latency", f.no_latency, "Ignore MAGPIE_LATENCY_JSON lines");
  sub->add_option("--latency-method", f.latency_method, "auto|cuda_graph|kernel_trace|rocprof_timestamps|both|none")
      ->check(CLI::IsMember({"auto", "cuda_graph", "kernel_trace", "rocprof_timestamps", "both", "none"}))
      ->capture_default_str();
  sub->add_option("--latency-rep-ms", f.latency_rep_ms,
                  "Target repetition time a latency harness aims for (ms; default latency.rep_ms, 20); "
                  "the harness gets it as MAGPIE_LATENCY_REP_MS")
      ->check(CLI::PositiveNumber);
  sub->add_option("-o,--output-dir", f.output_dir, "Where the workspace goes")->capture_default_str();
  sub->add_option("--rounds", f.rounds, "Exactly this many performance rounds per implementation, interleaved (default: compare adapts, 3 to 10 until every verdict is settled; analyze 5)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--kernel-filter", f.kernel_filter, "Regex: only matching kernels count toward CUPTI time");
  sub->add_flag("--ncu", f.ncu, "One extra ncu --clock-control none pass for DRAM bytes and FLOPs");
  sub->add_option("--cupti-kind", f.cupti_kind,
                  "CUPTI kernel timing; auto (default) picks serial, which skips per-block instrumentation, "
                  "unless a probe round shows streams overlapping")
      ->check(CLI::IsMember({"auto", "concurrent", "serial"}));
  sub->add_flag("--html", f.html, "Also write <report>.html next to the JSON report: plots of the results");
  sub->add_flag("--strict", f.strict, "Unknown keys in the kernel YAML are errors (exit 2), not warnings");
  if (compare) {
    sub->add_option("--baseline", f.baseline, "Index of the baseline implementation")->capture_default_str();
    sub->add_option("--threshold", f.threshold, "Practical-equivalence band for SAME (default 0.02 = ±2%)")
        ->check(CLI::Range(0.0, 0.99));
    sub->add_flag("--fail-on-regression", f.fail_on_regression,
                  "Exit 1 when a candidate is SLOWER than the baseline beyond noise");
  }
}

void AnalyzeCommand::register_with(CLI::App& app) {
  analyze_ = app.add_subcommand(
      "analyze",
      "Build, check and time kernels: compile → correctness → performance, each SUCCESS/FAILED/SKIPPED.\n"
      "Writes <output-dir>/analyze_<id>_<time>/analyze_report.json. Exit 1 if any kernel is not correct.\n"
      "Examples:\n  magpie analyze vector_add.cu --type cuda --testcase 'bash test.sh'\n"
      "  magpie analyze -k examples/kernels/vector_add/kernel.yaml");
  add_common(analyze_, analyze_flags_, false);
  compare_ = app.add_subcommand(
      "compare",
      "Compare implementations against a baseline with identical settings, measured interleaved in rounds;\n"
      "ranked by median time, with bootstrap CIs and FASTER/SLOWER/SAME/AMBIGUOUS verdicts.\n"
      "Writes <output-dir>/compare_<time>/compare_report.json.\n"
      "Example:\n  magpie compare -k examples/kernels/matmul/compare.yaml --fail-on-regression");
  add_common(compare_, compare_flags_, true);
}

int AnalyzeCommand::run_mode(Flags& f, bool compare, bool verbose) {
  jobs::KernelEvaluationRequest r;
  r.compare = compare;
  r.sources.files = f.files;
  r.sources.kernel_config = f.kernel_config;
  r.sources.type = f.type;
  if (!f.testcase.empty()) r.sources.testcases = {f.testcase};
  r.sources.compile_command = f.compile_cmd;
  r.overrides.rounds = f.rounds;
  r.overrides.threshold = f.threshold;
  r.overrides.ncu = f.ncu;
  r.overrides.kernel_filter = f.kernel_filter;
  r.overrides.cupti_kind = f.cupti_kind;
  r.overrides.latency_method = f.latency_method;
  r.overrides.latency_rep_ms = f.latency_rep_ms;
  r.baseline = f.baseline;
  r.check_performance = !f.no_perf;
  r.check_latency = !f.no_latency;
  r.fail_on_regression = f.fail_on_regression;
  r.strict = f.strict;
  r.output_dir = f.output_dir;
  r.verbose = verbose;
  jobs::JobContext context = command_context(verbose);
  // Ctrl-C kills the running step's process group; what was measured is reported.
  context.cancel = &interrupt_flag();
  InterruptScope interrupts;
  auto progress = attach_progress(context);
  const jobs::KernelEvaluationOutcome outcome = jobs::evaluate_kernels(r, context);
  progress->finish();
  for (const auto& w : outcome.warnings) std::cerr << "warning: " << w << "\n";
  std::cout << jobs::console_text(outcome);
  std::cerr << jobs::error_text(outcome);
  if (f.html && !outcome.report_path.empty()) {
    html::KernelReportInput in{outcome.compare, outcome.gpu.name, outcome.timestamp, &outcome.evaluations,
                               outcome.ranking ? &*outcome.ranking : nullptr, outcome.verdict_settings};
    fs::path path = outcome.report_path;
    html::write_page(html::kernel_page(in), path.replace_extension(".html"));
    std::cerr << "html report: " << path.string() << "\n";
  }
  return outcome.exit_code();
}

int AnalyzeCommand::run(bool verbose) {
  if (analyze_ && analyze_->parsed()) return run_mode(analyze_flags_, false, verbose);
  return run_mode(compare_flags_, true, verbose);
}

}  // namespace magpie::app
