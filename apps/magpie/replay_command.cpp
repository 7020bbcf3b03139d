#include "replay_command.hpp"

#include <iostream>

#include "command_context.hpp"
#include "core/error.hpp"
#include "jobs/replay_jobs.hpp"

namespace magpie::app {

void ReplayCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "replay",
      "Turn CPU ops of a PyTorch profiler trace (recorded with record_shapes=True) into runnable\n"
      "kernel configs: per op DIR/NN_<op>/baseline.py (a bench_target that rebuilds the recorded\n"
      "shapes, strides and dtypes and calls the op), candidate.py (a copy to edit), compare.yaml\n"
      "(for magpie compare -k) and note.md/note.json (what the trace says the op cost).\n"
      "Ops that cannot be replayed are listed in DIR/replay.md with the reason.\n\n"
      "Examples:\n"
      "  magpie replay trace.json.gz --top-k 10 -o replay\n"
      "  magpie replay trace.json.gz --op aten::mm:[[16,4096],[4096,4096]]");
  sub_->add_option("trace", trace_, "Kineto trace file (.json or .json.gz)")
      ->required();  // a missing file is reported by the loader (exit 3, like the other commands)
  sub_->add_option(
      "--op", ops_,
      "Op to replay: NAME (aten::mm, or mm) or NAME:SHAPES with the shapes of its first tensor\n"
      "arguments as JSON ([[16,4096],[4096,4096]]); repeatable. Every recorded signature is\n"
      "replayed, most GPU time first (limit with --top-k)");
  sub_->add_option("--top-k", top_k_,
                   "The N ops with most GPU time (with --op: N signatures per op)")
      ->check(CLI::PositiveNumber);
  sub_->add_option("-o,--output-dir", output_dir_, "Where the replays go")->capture_default_str();
  sub_->add_flag("--json", json_, "Print replay.json on stdout instead of the table");
  sub_->add_option("--threads", threads_, "Ingest threads (0 = all cores)");
}

int ReplayCommand::run(bool verbose) {
  replay::ReplayRequest request;
  request.trace_path = trace_;
  for (const auto& op : ops_) request.ops.push_back(replay::parse_op_query(op));
  request.top_k = top_k_;
  request.output_dir = output_dir_;
  request.ingest.threads = threads_;
  jobs::JobContext context = command_context(verbose);
  if (verbose) context.progress = [](const jobs::Progress& p) { std::cerr << p.message << "\n"; };
  const auto outcome = jobs::replay_trace_ops(request, context);
  for (const auto& w : outcome.plan.warnings) std::cerr << "warning: " << w << "\n";
  if (json_) {
    std::cout << jobs::report_json(outcome).dump(2) << "\n";
  } else {
    std::cout << jobs::console_text(outcome);
  }
  return 0;
}

}  // namespace magpie::app
