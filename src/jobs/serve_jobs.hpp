#pragma once
// The serving benchmark job (`magpie benchmark vllm|sglang|atom`, MCP
// `benchmark`): launch or reach the engine, drive the workload, write the
// workspace, record the run.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "jobs/job_context.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/benchmark_report.hpp"

namespace magpie::jobs {

struct ServingBenchmarkOutcome {
  bool success = false;
  bool cancelled = false;
  std::filesystem::path workspace;
  serve::BenchmarkReport report;  // benchmark_report.json is its writer's rendering
  int64_t run_id = 0;
};

// Validates the config (Error(kRejected) naming what is missing), then runs.
// Whatever happens after the workspace exists, what was measured is written.
ServingBenchmarkOutcome run_serving_benchmark(const serve::BenchmarkConfig& config,
                                              const JobContext& context);

// The figures the results store keeps for a run (the names `results import`
// reads from a benchmark_report.json: store::metrics_from_report).
std::map<std::string, double> headline_metrics(const serve::BenchmarkReport& report);

// summary.txt's text.
std::string console_text(const ServingBenchmarkOutcome& outcome);

}  // namespace magpie::jobs
