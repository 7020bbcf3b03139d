#pragma once
// The serving benchmark job (`magpie benchmark vllm|sglang|atom`, MCP
// `benchmark`): launch or reach the engine, drive the workload, write the
// workspace, record the run.
#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "jobs/job_context.hpp"
#include "serve/benchmark_config.hpp"

namespace magpie::jobs {

struct ServingBenchmarkOutcome {
  bool success = false;
  bool cancelled = false;
  std::filesystem::path workspace;
  nlohmann::json report;  // benchmark_report.json as written (built by src/serve)
  int64_t run_id = 0;
};

// Validates the config (Error(kRejected) naming what is missing), then runs.
// Whatever happens after the workspace exists, what was measured is written.
ServingBenchmarkOutcome run_serving_benchmark(const serve::BenchmarkConfig& config,
                                              const JobContext& context);

// summary.txt's text.
std::string console_text(const ServingBenchmarkOutcome& outcome);

}  // namespace magpie::jobs
