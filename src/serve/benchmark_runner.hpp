#pragma once
// One `magpie benchmark` serving job: workspace, server, workload cases,
// profiling window, GPU selection and monitoring, reports. Whatever happens
// (server death, Ctrl-C, the overall timeout, a case failing), what was
// measured is written, marked complete or not.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "serve/benchmark_config.hpp"
#include "serve/benchmark_report.hpp"
#include "serve/dataset.hpp"

namespace magpie::serve {

struct RunContext {
  bool progress = false;  // live line on stderr
  bool verbose = false;
  const std::atomic<bool>* stop = nullptr;  // set by SIGINT (CLI) or a cancel (MCP)
  // Milestones and request counts, for faces that relay progress (MCP).
  std::function<void(double done, std::optional<double> total, const std::string& message)>
      on_progress;
  // Called once the workspace exists, before the server starts: a run killed
  // later is still found by its workspace.
  std::function<void(const std::filesystem::path&)> on_workspace;
};

struct BenchmarkOutcome {
  bool success = false;
  std::filesystem::path workspace;
  BenchmarkReport report;  // as written to benchmark_report.json and summary.txt
};

BenchmarkOutcome run_benchmark(const BenchmarkConfig& config, const RunContext& context);

// A case's prompts: random token ids, or a ShareGPT/JSONL file's (whose
// max_tokens is the case's output length when one was given).
std::vector<Prompt> case_prompts(const ClientOptions& client, const WorkloadCase& w, size_t count);


}  // namespace magpie::serve
