// magpie: command-line front end. Parses flags, calls the libraries, prints,
// and maps magpie::Error kinds to exit codes (README.md, "Exit codes").
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "analyze_command.hpp"
#include "benchmark_command.hpp"
#include "command_context.hpp"
#include "gpu_info_command.hpp"
#include "mcp_command.hpp"
#include "ray_command.hpp"
#include "replay_command.hpp"
#include "results_command.hpp"
#include "trace_diff_command.hpp"
#include "tracelens_command.hpp"
#include "unknown_arguments.hpp"
#include "whatif_command.hpp"
#include "core/error.hpp"
#include "core/phase_times.hpp"
#include "gpu/environment.hpp"

int main(int argc, char** argv) {
  magpie_phase::t0();  // MAGPIE_PHASE_TIMES marks count from here
  CLI::App app{
      "Magpie: benchmark LLM inference serving, analyze and compare GPU kernels, and explain "
      "profiler traces.\n\nExamples:\n"
      "  magpie benchmark --trace-dir ./traces --top-k 20          # gap analysis of torch traces\n"
      "  magpie benchmark --trace-dir ./traces --find-kernel-sources --kernel-source-repos ~/vllm\n"
      "  magpie benchmark vllm -m MODEL --concurrency 1,8 --input-len 1024 --output-len 128\n"
      "  magpie tracelens trace.json.gz -o out                      # stage roofline reports\n"
      "  magpie compare naive.cu tiled.cu --type cuda --testcase ./test  # verdicts vs baseline\n"
      "  magpie replay trace.json.gz --top-k 10 -o replay            # hot ops → compare configs\n"
      "  magpie trace-diff before.json.gz after.json.gz -o diff     # what changed, end to end\n"
      "  magpie -e ray benchmark --trace-dir /shared/traces         # as a job on a Ray cluster\n"
      "  magpie -e ray -w 4 batch sweep.yaml                        # many runs, one summary table\n",
      "magpie"};
  app.set_version_flag("--version", magpie::gpu::version_string());
  app.require_subcommand(0, 1);
  // A misspelled command or flag is named with the nearest one the parser
  // knows, in place of the error it caused further on (exit 2).
  app.failure_message(magpie::app::failure_message);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Print progress and details to stderr");
  bool progress_lines = false;
  app.add_flag("--progress", progress_lines,
               "Progress lines on stderr even when it is not a terminal (a terminal always gets them)");
  magpie::app::GlobalOptions global;
  global.register_with(app);
  magpie::app::GpuInfoCommand gpu_info;
  gpu_info.register_with(app);

  magpie::app::BenchmarkCommand benchmark;
  benchmark.register_with(app);
  magpie::app::TraceLensCommand tracelens;
  tracelens.register_with(app);
  magpie::app::AnalyzeCommand analyze;
  analyze.register_with(app);
  magpie::app::ResultsCommand results;
  results.register_with(app);
  magpie::app::ReplayCommand replay;
  replay.register_with(app);
  magpie::app::McpCommand mcp;
  mcp.register_with(app);
  magpie::app::BatchCommand batch;
  batch.register_with(app);
  magpie::app::WhatIfCommand whatif;
  whatif.register_with(app);
  magpie::app::TraceDiffCommand trace_diff;
  trace_diff.register_with(app);

  magpie::app::set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
    magpie::app::set_progress_lines(progress_lines);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return magpie::exit_code_for(magpie::ErrorKind::kUsage);
  }
  if (gpu_info.requested()) return gpu_info.run();
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return 0;
  }
  try {
    if (auto code = magpie::app::run_on_ray_if_asked(app, global, argc, argv, verbose)) return *code;
    benchmark.set_globals(global.environment, global.docker_image);
    if (batch.parsed()) return batch.run(global, verbose);
    if (benchmark.parsed()) {
      const int code = benchmark.run(verbose);
      magpie_phase::mark("command returned");
      return code;
    }
    if (tracelens.parsed()) return tracelens.run(verbose);
    if (analyze.parsed()) return analyze.run(verbose);
    if (results.parsed()) return results.run(verbose);
    if (replay.parsed()) return replay.run(verbose);
    if (mcp.parsed()) return mcp.run(verbose);
    if (whatif.parsed()) return whatif.run(verbose);
    if (trace_diff.parsed()) return trace_diff.run(verbose);
  } catch (const magpie::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return magpie::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return magpie::exit_code_for(magpie::ErrorKind::kInternal);
  }
  return 0;
}
