#pragma once
// What one `magpie benchmark` run found, as types: the runner fills it, the
// faces (CLI, MCP, results store) read it, and one writer
// (benchmark_report_writer.hpp) turns it into benchmark_report.json and
// summary.txt with Magpie's keys (docs/MAGPIE_COMPATIBILITY.md §4).
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/capture_stability.hpp"
#include "analysis/gap_analysis.hpp"
#include "analysis/gap_analysis_report.hpp"
#include "analysis/tracelens_report.hpp"
#include "gpu/environment.hpp"
#include "serve/gpu_names.hpp"
#include "serve/model_files.hpp"
#include "serve/prometheus_scrape.hpp"
#include "serve/slo.hpp"
#include "serve/slo_search.hpp"
#include "serve/load_shape.hpp"
#include "serve/workload.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/system_profiler.hpp"

namespace magpie::serve {

// How the run ended. Magpie's report has `success` and we add `complete`;
// `status` says which of these it was in one word.
enum class RunStatus { kSuccess, kFailed, kIncomplete, kTimeout, kCancelled };
std::string to_string(
    RunStatus status);  // "success", "failed", "incomplete", "timeout", "cancelled"

// The settings that shaped the numbers, echoed into the report (`config`).
struct ConfigEcho {
  std::string precision;
  std::string run_mode;  // docker | local | endpoint
  std::map<std::string, std::string> envs;
  size_t num_cases = 0;
  double timeout_seconds = 0;
  std::vector<std::string> precision_args;  // engine flags `precision` became; empty = none
  std::optional<TokenIdRange> token_ids;  // random prompts only
};

// The engine the load went to (`server`).
struct ServerInfo {
  std::string mode;  // local | docker | endpoint
  std::string url;
  std::map<std::string, std::string> env;
  std::string command;  // shell-quoted; empty in endpoint mode
  std::string image;
  // Docker mode: the image's content digest (`docker image inspect`), set by
  // the docker launcher when it knows it; empty = not known.
  std::string image_digest;
  std::filesystem::path log;  // empty in endpoint mode
  std::string model_revision;
  std::string served_model;
  std::string container;      // docker: the engine's container (launched or reused)
  bool left_running = false;  // docker, server_lifecycle.cleanup false: not stopped
};

// The client's own cost, so a reader can tell it from the server's.
struct ClientOverhead {
  MetricStats read_to_record;  // each event's first byte → its record
  size_t connections_opened = 0;
};

// One workload of the run (a sweep has several).
// A prefix pool's target beside the hit rate the server's own counters show
// over the case's measured requests (vLLM: prefix_cache_hits / prefix_cache_queries).
struct PrefixCacheReport {
  PrefixPlan plan;
  std::optional<double> measured_hit_rate;  // unset: the server exposes no such counters
  double queries = 0, hits = 0;             // tokens, the counters' deltas
  std::string note;                         // why nothing was measured
};

// Speculative decoding over a case, from vLLM's counters (deltas):
// acceptance rate = accepted / draft tokens; mean acceptance length =
// 1 + accepted / drafts (the target model's token plus those accepted).
struct SpecDecodeReport {
  double drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  std::optional<double> acceptance_rate, mean_acceptance_length;
};

struct CaseReport {
  std::string label;  // CONC32_ISL1024_OSL512
  int64_t concurrency = 0, input_len = 0, output_len = 0;
  int64_t num_prompts = 0;
  double request_rate = std::numeric_limits<double>::infinity();
  bool complete = false;
  bool profiled = false;
  ServingMetrics metrics;
  size_t not_sent = 0;
  ClientOverhead client;
  std::optional<PrefixCacheReport> prefix_cache;
  std::optional<SpecDecodeReport> spec_decode;  // the server exposes vLLM's spec_decode counters
  std::vector<RampWindow> ramp;  // --rate-ramp, --concurrency-ramp: each step's (or window's) requests
  bool ramp_concurrency = false;  // the ramp is --concurrency-ramp
  std::optional<SloResult> slo;  // --slo given: each term's value and whether the case met them
  std::filesystem::path raw_result_path;  // vLLM-layout result (written by the runner)
  std::filesystem::path requests_path;    // requests.jsonl
};

// One row of `kernel_summary`.
struct KernelTime {
  std::string name;
  double time_ms = 0;
  double percent = 0;
  int64_t calls = 0;
};

// One capture of profiler.torch_profiler.num_profiles and its analysis.
struct ProfileCapture {
  std::string label;               // capture_1, capture_2, ...
  std::filesystem::path dir;       // <trace dir>/capture_N: the capture's files, moved there
  size_t files = 0;
  double start_s = 0, stop_s = 0;  // seconds after the measured requests began
  std::string missing_reason;      // empty: its files were collected (and analysed unless `errors`)
  std::string note;                // e.g. closed early because the measured requests ended
  std::filesystem::path gap_analysis_dir;  // its gap_analysis reports
  std::vector<KernelTime> kernel_summary;
  std::vector<std::string> errors;  // its analysis failed
  bool analysed() const { return missing_reason.empty() && errors.empty() && files > 0; }
};

// Gap analysis of the profiled window's traces.
struct GapAnalysisBlock {
  analysis::GapAnalysisResult result;
  analysis::GapReportFiles files;
  std::vector<std::string> notes;
};

// TraceLens over the profiled window: its manifest, or why there is none.
struct TraceLensBlock {
  std::optional<analysis::TraceLensResult> result;
  std::vector<std::string> errors;
};

struct BenchmarkReport {
  std::string framework, model;
  std::string timestamp;  // local time, ISO 8601 without zone
  std::filesystem::path workspace_dir;
  std::string run_kind = "measurement";  // measurement | diagnostic
  bool profiling_enabled = false;
  ConfigEcho config;
  std::optional<GpuSelection> gpu_selection;  // absent: no selection asked for
  std::optional<ServerInfo> server;           // absent: it never got that far
  std::vector<CaseReport> cases;
  // --search: every probe (its runs are cases above) and the knee.
  std::optional<SloSearchResult> slo_search;
  // Server-side view: /metrics before and after the run (absent when the server died).
  std::optional<std::pair<PrometheusScrape, PrometheusScrape>> server_metrics;
  std::string server_metrics_prefix;  // "vllm:" or "" (all)
  // Profiling.
  std::optional<std::filesystem::path> torch_trace_dir;
  size_t torch_trace_files = 0;
  std::optional<GapAnalysisBlock> gap_analysis;
  std::vector<KernelTime> kernel_summary;
  std::vector<std::string> top_bottlenecks;
  std::optional<TraceLensBlock> tracelens;
  // num_profiles > 1 (or a bounded capture): every capture, and the top kernels' share across them.
  std::vector<ProfileCapture> profile_captures;
  std::optional<analysis::CaptureStability> capture_stability;
  // system_profiler.enabled: the capture and its kernel summary (nsys / rocprofv3).
  std::optional<SystemProfileBlock> system_profiler;
  // gpu_monitor.enabled: the per-GPU summary or why there is none.
  std::optional<GpuMonitorSummary> gpu_monitor;
  // envs.RUN_EVAL / quality.enabled: the accuracy gate (quality_gate.hpp), as written.
  std::optional<nlohmann::json> quality_gate;
  // What a comparison needs to reproduce the run (benchmark_environment.hpp).
  std::optional<gpu::EnvironmentSnapshot> environment;
  // Outcome.
  RunStatus status = RunStatus::kFailed;
  bool success = false;
  bool complete = false;
  bool reward_eligible = false;
  double execution_time_s = 0;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

}  // namespace magpie::serve
