#pragma once
// `magpie benchmark` settings: Magpie's YAML (docs/MAGPIE_COMPATIBILITY.md §3) and inline flags
// (§1) resolved into one struct, plus our client knobs.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "serve/gpu_names.hpp"
#include "analysis/step_annotation.hpp"
#include "serve/request_builder.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/quality_gate.hpp"
#include "serve/slo.hpp"
#include "serve/slo_search.hpp"
#include "serve/load_shape.hpp"

namespace magpie::serve {

// Multi-turn session workloads (dataset synthetic_sessions / sharegpt_sessions).
struct SessionSettings {
  int64_t turns = 0;              // 0: 4 synthetic turns, or every turn of a ShareGPT conversation
  int64_t system_prompt_len = 0;  // words of one system prompt shared by all synthetic sessions
  std::string think_time = "0";   // between a reply and the next turn (serve/sessions.hpp)
  std::string header;             // sticky-session header name; its value is the session id
  int64_t concurrency = 0;        // sessions in flight; 0 = the case's CONC
  int64_t num_sessions = 0;       // 0 = the case's NUM_PROMPTS
};

// Coding-agent sessions (dataset agentic_coding, client.agent; serve/sessions.hpp
// AgenticSessionOptions says what each shapes). Turns, the system prompt's
// length, think time and session counts come from SessionSettings.
struct AgentSettings {
  int64_t context_len = 4000, tool_result_len = 400, tool_call_len = 48;
  int64_t subagents = 2, subagent_turns = 3, spawn_after_turn = 1;
  double range_ratio = 0.5;
  bool given = false;  // a client.agent key was set: refused for another dataset
};

struct ClientOptions {
  ApiKind api = ApiKind::kCompletions;
  std::string dataset = "random";  // a name in serve/workload.hpp's registry
  std::string dataset_path;
  std::vector<double> request_rates{std::numeric_limits<double>::infinity()};  // >1 = sweep
  double burstiness = 1.0;
  int64_t warmups = -1;   // -1 = Magpie's 2·CONC
  double duration_s = 0;  // > 0: time-bounded instead of NUM_PROMPTS
  GoodputSlo slo;
  std::vector<SloTerm> slo_terms;  // --slo / client.slo: each case met them or not
  std::optional<SloSearchSettings> search;  // --search / client.search: the highest rate meeting slo_terms
  std::optional<RateRamp> rate_ramp;  // --rate-ramp / client.rate_ramp: the rate changes during a case
  // --concurrency-ramp / client.concurrency_ramp: the cap on requests in flight changes during a case
  std::optional<LoadRamp> concurrency_ramp;
  std::vector<double> percentiles{50, 90, 95, 99};
  uint64_t seed = 0;
  int32_t token_id_min = 100, token_id_max = 30000;
  bool token_id_max_given = false;  // the user's bound: refused, not lowered, above the vocab
  int64_t prefix_len = 0;
  int64_t prefix_pool = 0;    // > 0: a pool of this many prefixes of prefix_len tokens
  double prefix_reuse = 1.0;  // the fraction of requests that start with a pool prefix
  bool prefix_reuse_given = false;
  double request_timeout_s = 600;
  bool continuous_usage = false;
  bool ignore_eos = true;
  std::string served_model_name;    // the `model` field; default: what /v1/models reports
  int64_t profile_num_prompts = 0;  // profiled window size; 0 = the whole case
  SessionSettings sessions;
  AgentSettings agent;
  double trace_speedup = 1.0;  // recorded traffic: timestamps divided by this
};

struct GapSettings {
  bool enabled = true;  // runs when traces exist (a profiled run)
  double start_pct = 0, end_pct = 100, min_duration_us = 0;
  size_t top_k = 20;
  std::vector<std::string> categories{"kernel", "gpu"};
  std::vector<std::string> ignore_categories{"gpu_user_annotation", "user_annotation"};
  bool find_kernel_sources = false;
  std::vector<std::string> kernel_source_repos;  // a YAML list or a comma string
  // A kernel_source_repos entry that is a git remote (a URL, git@host:path or
  // NAME.git) is cloned into repos_base_dir before the run (serve/source_repos).
  bool auto_clone_repos = true;
  std::string repos_base_dir;  // empty: ~/.cache/magpie/repos
};

// profiler.torch_profiler beyond `enabled` (BenchmarkConfig::torch_profiler):
// how many captures the profiled case takes and how each is bounded
// (docs/BENCHMARK_KEYS.md "Repeated captures").
struct TorchProfilerSettings {
  int64_t num_profiles = 1;            // captures during the profiled case's measured requests
  int64_t num_steps = 0;               // engine iterations a capture records (0: until stopped)
  double interval_seconds = 0;         // pause between one capture's flush and the next start
  double capture_timeout_seconds = 0;  // how long a capture stays open (0: one capture, the whole case)
  double flush_timeout_seconds = 180;  // wait for a capture's files after /stop_profile
  // More than one capture, or a bounded one: the capture schedule runs beside the load.
  bool scheduled() const { return num_profiles > 1 || capture_timeout_seconds > 0; }
};

// profiler.tracelens (docs/MAGPIE_COMPATIBILITY.md §3); `enabled` is BenchmarkConfig::tracelens.
struct TraceLensSettings {
  std::string analysis_mode = "inference";  // inference | pytorch ("classic" is read as pytorch)
  std::vector<analysis::Stage> analysis_stages;  // empty = all
  int64_t num_steps = 32;                        // last N iterations per stage are pick candidates
  std::string export_format = "csv";             // csv | excel | both
  std::string gpu_arch_config;                   // GPU table file (--gpu-arch-file)
  bool perf_report_enabled = true;
  std::optional<bool> multi_rank_report_enabled;  // unset: on in pytorch mode only
};

// One workload of a sweep (Magpie's sweep_matrix case, or one value of a
// concurrency / rate sweep).
struct WorkloadCase {
  int64_t concurrency = 32;
  int64_t input_len = 1024, output_len = 512;
  bool input_len_given = false, output_len_given = false;  // OSL/ISL set, not defaults
  int64_t num_prompts = 320;
  bool num_prompts_given = false;
  bool range_ratio_given = false;
  double range_ratio = 0.5;
  double request_rate = std::numeric_limits<double>::infinity();
  std::string label() const;  // "CONC32_ISL1024_OSL512" (+ "_RATE2.5")
};

// `server_lifecycle:`. enabled false: Magpie does not launch the engine, one
// must already answer at PORT; force_reuse: use a running one (docker: a
// container magpie started for this framework and model; else one answering
// at PORT), else launch. cleanup false: docker mode leaves its container
// running at the end (a local engine is a child of magpie and always stops).
struct ServerLifecycle {
  bool enabled = true;
  bool force_reuse = false;
  bool cleanup = true;
};

// quality: (ours), beside the public tool's envs RUN_EVAL, MAGPIE_EVAL_TASKS,
// MAGPIE_EVAL_LIMIT and EVAL_TASKS_DIR; what the section leaves unset the envs give.
struct QualitySection {
  std::optional<bool> enabled;
  std::vector<std::string> tasks;
  std::optional<int64_t> limit, num_fewshot, num_concurrent;
  std::string task_dir, model_type, lm_eval;
  std::optional<double> timeout_s;
};

struct BenchmarkConfig {
  std::string framework = "vllm";
  std::string model;
  std::string precision = "fp8";
  bool precision_given = false;  // only an explicit precision sets engine flags
  std::string run_mode = "docker";          // docker | local (ray: dispatched by src/jobs/ray_jobs)
  std::string run_kind = "auto";            // auto | measurement | diagnostic
  std::map<std::string, std::string> envs;  // upper-cased keys
  std::string docker_image, gpu_arch;
  double timeout_seconds = 3600;  // the whole run; 0 = none
  std::string hf_cache_path;
  double server_ready_timeout_s = 2700;
  ServerLifecycle lifecycle;
  std::optional<GpuSelectionConfig> gpu_selection;  // absent: the engine sees every GPU
  GpuMonitorConfig gpu_monitor;
  bool torch_profiler = false;  // we default to a clean run (Magpie enables it)
  TorchProfilerSettings torch_profiler_settings;
  bool system_profiler = false;
  std::vector<std::string> system_profiler_args;  // profiler.system_profiler.profile_args
  bool tracelens = false;
  TraceLensSettings tracelens_settings;
  GapSettings gap;
  std::vector<std::map<std::string, std::string>> sweep_cases;
  std::string on_failure = "continue";
  std::vector<int64_t> concurrency_sweep;  // ours: --concurrency 4,8
  std::string endpoint;                    // ours: an already-running server
  std::string output_dir = "./results";
  std::vector<std::string> engine_extra_args;  // ours: appended after EXTRA_*_ARGS
  std::string engine_executable;               // ours: path to `vllm` / python
  bool engine_gpu = true;  // ours: false drops GPU-only engine flags (CPU builds)
  ClientOptions client;
  QualitySection quality;
  std::string config_yaml;  // the YAML as given, copied to the workspace
  std::vector<std::string> warnings;
  std::vector<std::string> unknown_keys;  // also in warnings; errors under --strict

  std::string env(const std::string& key, const std::string& fallback = {}) const;
  // PORT and TP, read through the one guarded parse (parse_number); nullopt/1 when unset.
  std::optional<int> port() const;
  int64_t tensor_parallel() const;
  std::vector<WorkloadCase> cases() const;
  std::string resolved_run_kind() const;  // auto → diagnostic when any profiler is on
  // The accuracy gate as the section and the envs set it; Error(kUsage) for a bad value.
  QualitySettings quality_settings() const;
};

// Inline flags; unset ones leave the config alone.
struct BenchmarkFlags {
  std::optional<std::string> framework, model, precision, run_mode, run_kind, docker_image,
      output_dir, endpoint, concurrency, input_len, output_len, tp, request_rate, num_prompts,
      dataset, dataset_path, api, range_ratio, max_model_len, served_model_name, engine_executable, slo;
  std::optional<bool> torch_profiler, system_profiler, engine_gpu;
  std::optional<double> timeout, burstiness, duration, slo_ttft_ms, slo_tpot_ms, slo_e2el_ms,
      request_timeout, ready_timeout;
  std::optional<int64_t> warmups, prefix_len, prefix_pool, token_id_max, profile_num_prompts;
  std::optional<double> prefix_reuse;
  // Sessions and recorded traffic.
  std::optional<int64_t> turns, system_prompt_len, session_concurrency, num_sessions;
  std::optional<std::string> think_time, session_header;
  std::optional<double> trace_speedup;
  std::optional<uint64_t> seed;
  // SLO search (serve/slo_search.hpp).
  std::optional<std::string> search, search_range, rate_ramp, concurrency_ramp;
  std::optional<double> search_step, search_noise, search_max_time;
  std::optional<int64_t> search_repeats, search_max_repeats, search_max_probes;
  std::vector<std::string> extra_engine_args;
  std::vector<std::string> envs;  // KEY=VALUE
};

// What a config number must be. Every value of the YAML, the env-style keys
// (envs:, sweep cases, --env) and PORT/TP go through parse_number, so a bad
// value is refused once, where the file and line (or the flag) are known.
enum class NumberKind {
  kNonNegative,     // seconds, GiB, microseconds
  kPositive,        // intervals, burstiness, SLOs
  kPositiveInt,     // CONC, ISL, OSL, NUM_PROMPTS, TP, top_k, count
  kNonNegativeInt,  // warmups, seed, prefix_len, GPU indices
  kPercent,         // 0..100
  kRangeRatio,      // 0 <= r < 1
  kPort,            // 1..65535
  kTokenId,         // 1..INT32_MAX
  kRate,            // > 0, or inf
};
std::optional<double> parse_number(const std::string& text, NumberKind kind);
std::string describe(NumberKind kind);  // "a positive integer"
// The env-style keys that take a number (CONC, ISL, OSL, NUM_PROMPTS, TP,
// RANDOM_RANGE_RATIO, PORT), upper-case; others (EXTRA_*_ARGS, MAX_MODEL_LEN) are passed as text.
std::optional<NumberKind> env_number_kind(const std::string& key);

BenchmarkConfig load_benchmark_yaml(const std::filesystem::path& path);
BenchmarkConfig parse_benchmark_yaml(const std::string& text, const std::string& origin);
// Magpie's rule: with a YAML only --run-mode and --run-kind override; our own
// flags (endpoint, client knobs, output dir) apply in both cases.
void apply_flags(BenchmarkConfig& config, const BenchmarkFlags& flags, bool from_yaml);
void validate(const BenchmarkConfig& config);

std::vector<double> parse_double_list(const std::string& s, const char* what);  // "1,2,inf"
std::vector<int64_t> parse_int_list(const std::string& s, const char* what);

}  // namespace magpie::serve
