#include "trace_diff_command.hpp"

#include <iostream>

#include "command_context.hpp"
#include "html/html_reports.hpp"
#include "jobs/trace_diff_jobs.hpp"

namespace magpie::app {

void TraceDiffCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "trace-diff",
      "Structural diff of two PyTorch profiler traces of one workload (before and after a change):\n"
      "ops matched by their place in the op tree (name, input shapes, parent ops; repeated calls\n"
      "paired in order), kernels by the op that launched them; per op and kernel the change in\n"
      "calls, host time and GPU time (changed / added / removed / moved). The end-to-end change\n"
      "(whole window; median iteration where ProfilerStep#N or step annotations exist) is\n"
      "explained by the critical path: its breakdown (cpu, launch, gpu, sync, collective, idle)\n"
      "before and after, and the ops whose time on the path changed most.\n"
      "With -o DIR: trace_diff.json, trace_diff_ops.csv, trace_diff_kernels.csv, trace_diff.html.\n\n"
      "Examples:\n"
      "  magpie trace-diff eager.json.gz graphs.json.gz\n"
      "  magpie trace-diff before.json.gz after.json.gz -o diff --json");
  sub_->add_option("before", before_, "Trace before the change (.json/.json.gz)")->required();
  sub_->add_option("after", after_, "Trace after the change")->required();
  sub_->add_option("-o,--output-dir", output_dir_, "Write trace_diff.json, the CSVs and trace_diff.html here");
  sub_->add_flag("--json", json_, "Print trace_diff.json on stdout instead of the tables");
  sub_->add_option("--rows", rows_, "Changed ops and kernels listed on the console")->capture_default_str();
  sub_->add_option("--rank", rank_, "Merged multi-rank traces: compare this rank (default: the first)");
  sub_->add_option("--threads", threads_, "Ingest threads (0 = all cores)");
}

int TraceDiffCommand::run(bool verbose) {
  jobs::TraceDiffRequest request;
  request.before = before_;
  request.after = after_;
  request.output_dir = output_dir_;
  request.rank = rank_;
  request.ingest.threads = threads_;
  jobs::JobContext context = command_context(verbose);
  auto progress = attach_progress(context);
  attach_ingest_progress(request.ingest, *progress);
  auto outcome = jobs::run_trace_diff(request, context);
  if (!output_dir_.empty())
    outcome.files.push_back(
        html::write_page(html::trace_diff_page(outcome.diff), std::filesystem::path(output_dir_) / "trace_diff.html"));
  progress->finish();
  for (const auto& w : outcome.diff.warnings) std::cerr << "warning: " << w << "\n";
  if (json_) {
    std::cout << jobs::report_json(outcome).dump(2) << "\n";
  } else {
    std::cout << jobs::console_text(outcome, rows_);
  }
  return 0;
}

}  // namespace magpie::app
