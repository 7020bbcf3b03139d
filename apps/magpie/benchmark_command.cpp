#include "benchmark_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

#include "command_context.hpp"
#include "html/html_reports.hpp"
#include "core/error.hpp"
#include "jobs/trace_jobs.hpp"

namespace magpie::app {

void BenchmarkCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "benchmark",
      "Benchmark an inference server, or (with --trace-dir) run gap analysis on PyTorch profiler "
      "traces.\n\nGap analysis ranks GPU kernels by total time across rank traces and writes\n"
      "<output-dir>/gap_analysis_<time>/{gap_analysis.csv, gap_analysis_rank<N>.csv, gap_analysis.json};\n"
      "<output-dir>/gap_analysis links to the newest run.\n"
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
  sub_->add_flag("--html", html_,
                 "Also write a self-contained HTML report with plots (gap_analysis.html, or\n"
                 "benchmark_report.html in the serving workspace)");
  serve_.register_with(sub_);
}

int BenchmarkCommand::run(bool verbose) {
  if (!trace_dir_.empty()) return run_gap_analysis(verbose);
  return serve_.run(framework_, output_dir_, output_dir_option_->count() > 0, verbose, html_);
}

int BenchmarkCommand::run_gap_analysis(bool verbose) {
  auto t0 = std::chrono::steady_clock::now();
  jobs::GapAnalysisRequest r;
  r.trace_dir = trace_dir_;
  r.config.top_k = top_k_;
  r.config.start_pct = start_pct_;
  r.config.end_pct = end_pct_;
  r.config.min_duration_us = min_duration_us_;
  r.config.categories = categories_;
  r.config.ignore_categories = ignore_categories_;
  r.ingest.include_python_functions = include_python_;
  r.ingest.threads = threads_;
  r.rank_csv = !no_rank_csv_;
  r.sources.enabled = find_kernel_sources_;
  for (const auto& repo : kernel_source_repos_) r.sources.repos.emplace_back(repo);
  r.output_dir = output_dir_;
  jobs::JobContext context = command_context(verbose);
  // Ctrl-C stops the ingest at its next chunk (exit 130); no report is written.
  context.cancel = &interrupt_flag();
  InterruptScope interrupts;
  auto progress = attach_progress(context);
  attach_ingest_progress(r.ingest, *progress);
  const jobs::GapAnalysisOutcome outcome = jobs::run_gap_analysis(r, context);
  progress->finish();
  for (const auto& w : jobs::warnings(outcome)) std::cerr << "warning: " << w << "\n";
  std::cout << jobs::console_text(outcome);
  if (html_) {
    auto path = html::write_page(html::gap_analysis_page(outcome.result),
                                 outcome.files.output_dir / "gap_analysis.html");
    std::cerr << "html report: " << path.string() << "\n";
  }
  if (verbose) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << fmt::format("done in {:.2f} s\n", s);
  }
  return 0;
}

}  // namespace magpie::app
