#pragma once
// The profiled window: POST /start_profile before the measured requests and
// /stop_profile after, then wait for the server to finish writing its torch
// traces into <workspace>/torch_trace and run gap analysis on them.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/tracelens_report.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/benchmark_report.hpp"
#include "serve/endpoint.hpp"

namespace magpie::serve {

// Returns "" on success, else what went wrong (the run continues unprofiled).
// `body`: a JSON object for servers that take per-capture options ("" sends none).
std::string start_profile(const Endpoint& endpoint, const std::string& body = "");
std::string stop_profile(const Endpoint& endpoint);

// Waits until trace files exist and stop growing (servers flush them after
// /stop_profile returns). Returns how many there are.
size_t wait_for_traces(const std::filesystem::path& dir, double timeout_s);

// The /start_profile body for capture `index` (1-based): vLLM takes a file
// name prefix and an iteration bound, SGLang a step count.
std::string capture_start_body(const std::string& framework, size_t index, int64_t num_steps);

// The captures, one after another, while `load_done` is unset: start, hold the
// capture open (capture_timeout_seconds, default 10 s when several are asked
// for), stop, wait up to flush_timeout_seconds for its new files and move them
// into trace_dir/capture_N, pause interval_seconds. A capture not started
// before the load ends, or whose files did not settle in time, is missing.
std::vector<ProfileCapture> run_capture_schedule(const Endpoint& endpoint,
                                                 const std::filesystem::path& trace_dir,
                                                 const TorchProfilerSettings& settings,
                                                 const std::string& framework,
                                                 const std::atomic<bool>& load_done,
                                                 const std::function<bool()>& server_alive);

struct GapOutcome {
  std::optional<GapAnalysisBlock> block;  // benchmark_report.gap_analysis; absent when it failed
  std::vector<KernelTime> kernel_summary;
  std::vector<std::string> top_bottlenecks;  // the first 10 kernel names
  std::vector<std::string> errors;
  std::vector<std::string> notes;
};

// Gap analysis over the traces; when they hold no GPU kernels (a CPU-only
// server) it re-runs over cpu_op events and says so instead of failing.
GapOutcome run_profile_gap_analysis(const std::filesystem::path& trace_dir,
                                    const std::filesystem::path& output_dir,
                                    const GapSettings& settings);

// profiler.tracelens as the analysis options (trace and output dir left to the caller).
analysis::TraceLensOptions tracelens_options(const TraceLensSettings& settings);

}  // namespace magpie::serve
