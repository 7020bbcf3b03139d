#include "tracelens_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "analysis/tracelens_report.hpp"
#include "command_context.hpp"
#include "html/html_reports.hpp"
#include "jobs/trace_jobs.hpp"
#include "core/error.hpp"

namespace magpie::app {

void TraceLensCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "tracelens",
      "TraceLens-style reports from a PyTorch profiler trace: per inference stage (prefilldecode,\n"
      "decode, prefill) the ops and kernels that dominate, their FLOPs and bytes, and where they\n"
      "sit on the GPU's roofline. Writes DIR/tracelens/<stage>/*.csv (perf_report.xlsx with --export-format excel or both),\n"
      "DIR/tracelens/<stage>_ISL<isl>_OSL<osl>_CONC<conc>_kernel_roofline_simple.csv and\n"
      "DIR/tracelens/tracelens_manifest.json.");
  sub_->add_option("trace", trace_, "Trace file (.json/.json.gz), or a folder of rank traces")
      ->required();
  sub_->add_option("--mode", mode_, "inference: split into stages; pytorch: whole trace per rank")
      ->check(CLI::IsMember({"inference", "pytorch", "classic"}))
      ->capture_default_str();
  sub_->add_option("--stages", stages_,
                   "all, or a comma list of prefilldecode,decode,prefill (aliases pd, mixed, "
                   "decode_only, prefill_only)")
      ->capture_default_str();
  sub_->add_option("--export-format", export_format_, "csv, excel or both")
      ->check(CLI::IsMember({"csv", "excel", "both"}))
      ->capture_default_str();
  sub_->add_option("--gpu-arch", gpu_arch_,
                   "GPU for the roofline (H200, MI300X, ...), instead of the trace's "
                   "deviceProperties");
  sub_->add_option("--gpu-arch-file", gpu_arch_file_,
                   "JSON that overrides or adds GPUs (Magpie or TraceLens keys)")
      ->check(CLI::ExistingFile);
  sub_->add_option("--capture-dir", capture_dir_,
                   "Graph-capture traces of the same run (vLLM capture_traces/), to attribute "
                   "graph-replayed kernels to ops")
      ->check(CLI::ExistingDirectory);
  sub_->add_option("--isl", isl_, "Input length, for the summary file name");
  sub_->add_option("--osl", osl_, "Output length, for the summary file name");
  sub_->add_option("--conc", conc_, "Concurrency, for the summary file name");
  sub_->add_option("-o,--output-dir", output_dir_, "Reports go to DIR/tracelens")
      ->capture_default_str();
  sub_->add_flag("--include-python-functions", include_python_,
                 "Also ingest python_function events (slower)");
  sub_->add_option("--threads", threads_, "Worker threads (0 = all cores)");
  sub_->add_flag("--html", html_, "Also write DIR/tracelens/tracelens_report.html: plots per stage");
}

int TraceLensCommand::run(bool verbose) {
  analysis::TraceLensOptions o;
  o.trace = trace_;
  o.mode = mode_ == "classic" ? "pytorch" : mode_;
  if (stages_ != "all") {
    std::stringstream ss(stages_);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item.empty()) continue;
      auto s = analysis::parse_stage(item);
      if (!s) {
        throw Error(ErrorKind::kUsage, fmt::format("unknown stage '{}' in --stages", item), "",
                    std::nullopt, "use all, or prefilldecode,decode,prefill");
      }
      if (std::find(o.stages.begin(), o.stages.end(), *s) == o.stages.end()) o.stages.push_back(*s);
    }
  }
  o.write_csv = export_format_ != "excel";
  o.write_excel = export_format_ != "csv";
  o.gpu_arch = gpu_arch_;
  o.gpu_arch_file = gpu_arch_file_;
  o.capture_dir = capture_dir_;
  if (isl_ >= 0) o.isl = isl_;
  if (osl_ >= 0) o.osl = osl_;
  if (conc_ >= 0) o.conc = conc_;
  o.output_dir = output_dir_;
  o.ingest.include_python_functions = include_python_;
  o.ingest.threads = threads_;
  jobs::JobContext context = command_context(verbose);
  // Ctrl-C stops the ingest at its next chunk (exit 130); no report is written.
  context.cancel = &interrupt_flag();
  InterruptScope interrupts;
  auto progress = attach_progress(context);
  attach_ingest_progress(o.ingest, *progress);
  const jobs::TraceLensOutcome outcome = jobs::run_tracelens(o, context);
  progress->finish();
  for (const auto& w : outcome.result.warnings) std::cerr << "warning: " << w << "\n";
  for (const auto& e : outcome.result.errors) std::cerr << "error: " << e << "\n";
  std::cout << jobs::console_text(outcome);
  if (html_ && !outcome.result.manifest.empty()) {
    auto path = html::write_page(html::tracelens_page(outcome.result),
                                 outcome.result.manifest.parent_path() / "tracelens_report.html");
    std::cerr << "html report: " << path.string() << "\n";
  }
  return outcome.result.errors.empty() ? 0 : 1;
}

}  // namespace magpie::app
