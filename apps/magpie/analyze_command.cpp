#include "analyze_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "kernel/evaluator.hpp"
#include "kernel/markdown_table.hpp"
#include "kernel/performance_rounds.hpp"
#include "kernel/ranking.hpp"
#include "kernel/report_json.hpp"
#include "kernel/workspace.hpp"

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
  sub->add_option("--latency-rep-ms", f.latency_rep_ms, "Target repetition time for user harnesses (ms)")
      ->capture_default_str();
  sub->add_option("-o,--output-dir", f.output_dir, "Where the workspace goes")->capture_default_str();
  sub->add_option("--rounds", f.rounds, "Performance runs per implementation, interleaved (default 5)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--kernel-filter", f.kernel_filter, "Regex: only matching kernels count toward CUPTI time");
  sub->add_flag("--ncu", f.ncu, "One extra ncu --clock-control none pass for DRAM bytes and FLOPs");
  sub->add_option("--cupti-kind", f.cupti_kind,
                  "CUPTI kernel timing; auto (default) picks serial, which skips per-block instrumentation, "
                  "unless a probe round shows streams overlapping")
      ->check(CLI::IsMember({"auto", "concurrent", "serial"}));
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

KernelConfig AnalyzeCommand::build_config(const Flags& f, bool compare, const VarLookup& lookup) const {
  KernelConfig cfg;
  if (!f.kernel_config.empty()) cfg = load_kernel_config(f.kernel_config, lookup);
  KernelType type = parse_kernel_type(f.type);
  for (size_t i = 0; i < f.files.size(); ++i) {
    fs::path p = fs::absolute(f.files[i]).lexically_normal();
    if (!fs::exists(p)) {
      throw Error(ErrorKind::kNotFound, "kernel file not found", p.string(), std::nullopt, "check the path");
    }
    KernelSpec k;
    k.id = compare ? fmt::format("kernel_{}_{}", i, p.stem().string()) : p.stem().string();
    k.type = type;
    k.source_files = {p};
    k.working_dir = p.parent_path();
    cfg.kernels.push_back(std::move(k));
  }
  for (auto& k : cfg.kernels) {
    if (k.testcase_command.empty() && !f.testcase.empty()) k.testcase_command = {split_command(f.testcase)};
    if (k.compile_command.empty() && !f.compile_cmd.empty()) k.compile_command = {split_command(f.compile_cmd)};
    if (k.bench_target.empty() && is_python_type(k.type)) k.bench_target = cfg.latency.bench_target;
  }
  if (f.rounds > 0) cfg.performance.rounds = f.rounds;
  if (f.threshold >= 0) cfg.performance.threshold = f.threshold;
  if (f.ncu) cfg.performance.ncu_pass = true;
  if (!f.cupti_kind.empty()) cfg.performance.cupti_kind = f.cupti_kind;
  if (!f.kernel_filter.empty()) cfg.latency.kernel_filter = f.kernel_filter;
  cfg.latency.method = f.latency_method;
  if (f.latency_method == "none") cfg.latency.enabled = false;
  return cfg;
}

int AnalyzeCommand::run_mode(Flags& f, bool compare, bool verbose) {
  const char* mode = compare ? "compare" : "analyze";
  if (!f.kernel_config.empty() && !f.files.empty()) {
    throw Error(ErrorKind::kUsage, "give kernel files or --kernel-config, not both", "", std::nullopt,
                fmt::format("e.g. magpie {} -k kernel.yaml", mode));
  }
  if (!compare && f.kernel_config.empty() && f.testcase.empty() && !f.files.empty()) {
    std::cerr << "error: --testcase is required for analyze mode\n";
    return 1;
  }
  GpuInfo gpu = detect_gpu();
  KernelConfig cfg = build_config(f, compare, magpie_lookup(gpu, {}));
  for (const auto& w : cfg.warnings) std::cerr << "warning: " << w << "\n";
  if (cfg.kernels.empty()) {
    std::cerr << fmt::format("error: no kernels given: pass kernel files or -k kernel.yaml (magpie {} --help)\n", mode);
    return 1;
  }
  if (compare && cfg.kernels.size() < 2) {
    std::cerr << "error: compare needs at least 2 kernels\n";
    return 1;
  }
  if (compare && f.baseline >= cfg.kernels.size()) {
    throw Error(ErrorKind::kUsage, fmt::format("--baseline {} is out of range (0..{})", f.baseline, cfg.kernels.size() - 1));
  }

  EvaluatorOptions opt;
  opt.performance = cfg.performance;
  opt.correctness = cfg.correctness;
  opt.latency = cfg.latency;
  opt.check_performance = !f.no_perf;
  opt.check_latency = !f.no_latency && cfg.latency.enabled;
  opt.gpu = gpu;
  opt.python_dir = default_python_dir();
  opt.cupti_lib = opt.gpu.vendor == "NVIDIA" ? default_cupti_lib() : fs::path{};
  opt.verbose = verbose;
  std::string stamp = local_timestamp();
  std::string name = compare ? fmt::format("compare_{}", stamp) : fmt::format("analyze_{}_{}", cfg.kernels.front().id, stamp);
  opt.workspace = make_workspace(f.output_dir, name);
  if (compare) opt.baseline = &cfg.kernels[f.baseline];
  if (verbose) {
    std::cerr << fmt::format("gpu: {} ({}); cupti: {}; python harness: {}\n", opt.gpu.name.empty() ? "none" : opt.gpu.name,
                             opt.gpu.arch, opt.cupti_lib.empty() ? "none" : opt.cupti_lib.string(),
                             opt.python_dir.string());
  }
  Evaluator ev(opt);
  std::vector<Evaluation> evals(cfg.kernels.size());
  for (size_t i = 0; i < evals.size(); ++i) {
    evals[i].index = i;
    evals[i].spec = cfg.kernels[i];
    if (verbose) std::cerr << fmt::format("[{}] compile + correctness\n", evals[i].spec.id);
    ev.prepare(evals[i]);
  }
  CuptiChoice cupti = run_performance_rounds(ev, evals);
  for (auto& e : evals) ev.finish(e);

  int exit_code = 0;
  for (const auto& e : evals) {
    if (!e.correct()) exit_code = 1;
  }
  std::string iso = iso_timestamp();
  if (compare) {
    VerdictSettings vs{cfg.performance.threshold, cfg.performance.bootstrap_resamples, cfg.performance.bootstrap_seed,
                       cfg.performance.confidence};
    Ranking ranking = rank_evaluations(evals, f.baseline, vs);
    write_file_atomic(opt.workspace / "compare_report.json", compare_report(evals, ranking, vs, cupti, iso).dump(2));
    std::cout << markdown_table(evals, &ranking) << "\n" << ranking.summary << "\n";
    if (f.fail_on_regression && ranking.any_regression) {
      std::cerr << "error: a candidate is SLOWER than the baseline (--fail-on-regression)\n";
      exit_code = 1;
    }
  } else {
    write_file_atomic(opt.workspace / "analyze_report.json", analyze_report(evals, iso).dump(2));
    std::cout << markdown_table(evals);
  }
  if (!cupti.kind.empty()) std::cout << "note: " << describe(cupti) << "\n";
  for (const auto& e : evals) {
    for (const auto& n : e.correctness.notes) std::cout << fmt::format("note: {}: {}\n", e.spec.id, n);
    for (const auto& err : e.errors) {
      std::cerr << fmt::format("{}: {}\n", e.spec.id, err.substr(0, err.find('\n')));
    }
  }
  std::cout << "Workspace: " << opt.workspace.string() << "\n";
  return exit_code;
}

int AnalyzeCommand::run(bool verbose) {
  if (analyze_ && analyze_->parsed()) return run_mode(analyze_flags_, false, verbose);
  return run_mode(compare_flags_, true, verbose);
}

}  // namespace magpie::app
