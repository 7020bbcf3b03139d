#include "whatif_command.hpp"

#include <cmath>
#include <iostream>

#include "command_context.hpp"
#include "jobs/critical_path_jobs.hpp"

namespace magpie::app {

void WhatIfCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "whatif",
      "Critical path of a PyTorch profiler trace, per iteration (ProfilerStep#N or engine step\n"
      "annotations; the whole window otherwise): how much of each step is host work, launch\n"
      "overhead, GPU work, sync waits, collectives and idle, which ops and kernels sit on it, and\n"
      "what a change would gain end to end, by re-timing the trace's dependency graph.\n"
      "Scenarios (repeat --scenario; NAME is an exact op name, TEXT part of a kernel name):\n"
      "  op:NAME:2x        GPU work launched inside op NAME runs 2x faster (inf: takes no time)\n"
      "  op:NAME:+30us     every call of op NAME adds 30 us of GPU time after its last kernel\n"
      "  op:NAME:SHAPES:2x only the calls with these Input Dims, as replay's --op NAME:SHAPES\n"
      "                    (op:aten::mm:[[4,2048],[2048,5632]]:2x)\n"
      "  kernel:TEXT:1.5x  kernels whose name contains TEXT run 1.5x faster (+5us: each longer)\n"
      "  cpu:2x            all host time 2x faster; cpu:NAME:2x only inside op NAME\n"
      "  launch:0          launch overhead removed, as with CUDA graphs (alias: graph)\n"
      "  sync:0            blocking syncs (cudaDeviceSynchronize, .item()) wait for nothing\n"
      "  wait:0            the other ranks arrive at each collective with this one (give all ranks)\n"
      "Always reported: per op the gain if its GPU work, or its host time, took no time.\n"
      "With -o DIR: critical_path.json, critical_path.csv (per iteration), critical_path_ops.csv,\n"
      "whatif.csv.\n\n"
      "Examples:\n"
      "  magpie whatif trace.json.gz\n"
      "  magpie whatif trace.json.gz --scenario launch:0 --scenario 'op:aten::mm:2x' -o whatif\n"
      "  magpie whatif trace.json.gz --scenario 'op:aten::scaled_dot_product_attention:+100us' --json\n"
      "  magpie whatif trace.json.gz --measured-step-us 2786 --scenario launch:0   # profiler cost out\n"
      "  magpie whatif rank0.json.gz rank1.json.gz --scenario wait:0");
  sub_->add_option("trace", traces_,
                   "Trace file (.json/.json.gz), or a folder of one job's rank traces; several files are\n"
                   "the ranks of one job (a merged multi-rank trace too): one report per rank, with each\n"
                   "collective linked to the other ranks' (wait:0 shows what waiting for them cost)")
      ->required();
  sub_->add_option("-s,--scenario", scenarios_, "A change to evaluate (syntax above); repeatable");
  sub_->add_option("-o,--output-dir", output_dir_, "Write critical_path.json and the CSVs here");
  sub_->add_flag("--json", json_, "Print critical_path.json on stdout instead of the tables");
  sub_->add_option("--measured-step-us", measured_step_us_,
                   "The step's time measured without the profiler (median, us): host time in the\n"
                   "graph is scaled so the median traced step matches it before any scenario")
      ->check(CLI::PositiveNumber);
  sub_->add_option("--kernel-overhead-us", kernel_overhead_us_,
                   "The profiler's cost per GPU event (us), taken off every kernel, copy and set\n"
                   "before any scenario (about 1 us on Hopper; docs/CRITICAL_PATH.md, Calibration)")
      ->check(CLI::NonNegativeNumber);
  sub_->add_option("--graph-gap-us", graph_gap_us_,
                   "The gap a CUDA graph leaves between kernels on this GPU (us), for launch:0;\n"
                   "measure it with examples/critical_path/graph_gap.py. Default: from kernels\n"
                   "replayed from a graph in the trace, a figure measured on the trace's GPU model,\n"
                   "else the trace's eager gap (larger: launch:0's gain comes out low)")
      ->check(CLI::NonNegativeNumber);
  sub_->add_option("--threads", threads_, "Ingest threads (0 = all cores)");
}

int WhatIfCommand::run(bool verbose) {
  jobs::WhatIfRequest request;
  request.trace_path = traces_.front();
  request.other_ranks.assign(traces_.begin() + 1, traces_.end());
  request.scenarios = scenarios_;
  request.output_dir = output_dir_;
  request.ingest.threads = threads_;
  request.calibration.measured_step_ns = static_cast<int64_t>(measured_step_us_ * 1e3);
  request.calibration.kernel_overhead_ns = static_cast<int64_t>(kernel_overhead_us_ * 1e3);
  if (graph_gap_us_ >= 0) request.graph_gap_ns = static_cast<int64_t>(std::llround(graph_gap_us_ * 1e3));
  jobs::JobContext context = command_context(verbose);
  auto progress = attach_progress(context);
  attach_ingest_progress(request.ingest, *progress);
  const auto outcome = jobs::run_whatif(request, context);
  progress->finish();
  for (const auto& w : outcome.warnings) std::cerr << "warning: " << w << "\n";
  for (const auto& rank : outcome.ranks) {
    const std::string who = rank.report.rank >= 0 ? "rank " + std::to_string(rank.report.rank) + ": " : "";
    for (const auto& w : rank.report.warnings) std::cerr << "warning: " << who << w << "\n";
    for (const auto& r : rank.results)
      for (const auto& w : r.warnings) std::cerr << "warning: " << r.scenario.text << ": " << w << "\n";
  }
  if (json_) {
    std::cout << jobs::report_json(outcome).dump(2) << "\n";
  } else {
    std::cout << jobs::console_text(outcome);
  }
  return 0;
}

}  // namespace magpie::app
