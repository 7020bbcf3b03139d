#include "benchmark_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

#include "analysis/gap_analysis_report.hpp"
#include "analysis/gap_analysis_run.hpp"
#include "core/error.hpp"

namespace magpie::app {

void BenchmarkCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "benchmark",
      "Benchmark an inference server, or (with --trace-dir) run gap analysis on PyTorch profiler "
      "traces.\n\nGap analysis ranks GPU kernels by total time across rank traces and writes\n"
      "<output-dir>/gap_analysis/{gap_analysis.csv, gap_analysis_rank<N>.csv, gap_analysis.json}.\n"
      "Accepts Kineto .json/.json.gz/.pt.trace.json.gz, rocprofv3 JSON and *_kernel_trace.csv.");
  sub_->add_option("framework", framework_, "Serving framework (vllm, sglang, atom)")
      ->check(CLI::IsMember({"vllm", "sglang", "atom"}));
  output_dir_option_ =
      sub_->add_option("-o,--output-dir", output_dir_, "Where reports go")->capture_default_str();
  auto* gap = "Gap analysis (--trace-dir)";
  sub_->add_option("--trace-dir", trace_dir_,
                   "Folder of profiler traces (uses DIR/torch_trace when present)")
      ->group(gap);
  sub_->add_option("--top-k", top_k_, "Kernels to list")->capture_default_str()->group(gap)
      ->check(CLI::PositiveNumber);
  sub_->add_option("--start-pct", start_pct_, "Window start, % of each rank's span")
      ->capture_default_str()->check(CLI::Range(0.0, 100.0))->group(gap);
  sub_->add_option("--end-pct", end_pct_, "Window end, % of each rank's span")
      ->capture_default_str()->check(CLI::Range(0.0, 100.0))->group(gap);
  sub_->add_option("--min-duration-us", min_duration_us_, "Drop events shorter than this")
      ->capture_default_str()->check(CLI::NonNegativeNumber)->group(gap);
  sub_->add_option("--categories", categories_,
                   "Keep events whose category contains one of these (case-insensitive)")
      ->capture_default_str()->group(gap);
  sub_->add_option("--ignore-categories", ignore_categories_,
                   "Drop events whose category contains one of these (checked first)")
      ->capture_default_str()->group(gap);
  sub_->add_flag("--no-rank-csv", no_rank_csv_, "Skip the per-rank CSVs")->group(gap);
  sub_->add_flag("--find-kernel-sources", find_kernel_sources_,
                 "Map kernels to source definitions in --kernel-source-repos, with a confidence")
      ->group(gap);
  sub_->add_option("--kernel-source-repos", kernel_source_repos_,
                   "Repositories to search (e.g. vllm, pytorch checkouts)")
      ->check(CLI::ExistingDirectory)->group(gap);
  sub_->add_flag("--include-python-functions", include_python_,
                 "Also ingest python_function events (slower; off like HTA's default)")
      ->group(gap);
  sub_->add_option("--threads", threads_, "Worker threads (0 = all cores)")->group(gap);
  serve_.register_with(sub_);
}

int BenchmarkCommand::run(bool verbose) {
  if (!trace_dir_.empty()) return run_gap_analysis(verbose);
  return serve_.run(framework_, output_dir_, output_dir_option_->count() > 0, verbose);
}

int BenchmarkCommand::run_gap_analysis(bool verbose) {
  if (start_pct_ >= end_pct_) {
    throw Error(ErrorKind::kUsage,
                fmt::format("--start-pct ({}) must be below --end-pct ({})", start_pct_, end_pct_));
  }
  if (find_kernel_sources_ && kernel_source_repos_.empty()) {
    throw Error(ErrorKind::kUsage, "--find-kernel-sources needs --kernel-source-repos PATH...", "",
                std::nullopt, "pass local checkouts, e.g. --kernel-source-repos ~/src/vllm");
  }
  auto t0 = std::chrono::steady_clock::now();
  analysis::GapAnalysisRunOptions options;
  options.config.top_k = top_k_;
  options.config.start_pct = start_pct_;
  options.config.end_pct = end_pct_;
  options.config.min_duration_us = min_duration_us_;
  options.config.categories = categories_;
  options.config.ignore_categories = ignore_categories_;
  options.ingest.include_python_functions = include_python_;
  options.ingest.threads = threads_;
  bool show_progress = verbose || ::isatty(STDERR_FILENO);
  if (show_progress) options.progress = [](const std::string& line) { std::cerr << line << "\n"; };

  auto result = analysis::run_gap_analysis(trace_dir_, options);
  for (const auto& w : result.warnings) std::cerr << "warning: " << w << "\n";
  for (const auto& r : result.ranks)
    for (const auto& w : r.warnings) std::cerr << "warning: " << w << "\n";
  for (const auto& s : result.skipped) std::cerr << "warning: skipped " << s.reason << "\n";

  analysis::SourceSearchOptions sources;
  sources.enabled = find_kernel_sources_;
  for (const auto& r : kernel_source_repos_) sources.repos.emplace_back(r);
  auto files = analysis::write_gap_reports(result, std::filesystem::path(output_dir_) / "gap_analysis",
                                           no_rank_csv_, sources);
  std::cout << analysis::gap_console_summary(result, files);
  if (verbose) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << fmt::format("done in {:.2f} s\n", s);
  }
  return 0;
}

}  // namespace magpie::app
