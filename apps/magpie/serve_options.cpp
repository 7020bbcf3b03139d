#include "serve_options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "command_context.hpp"
#include "html/html_reports.hpp"
#include "core/config_keys.hpp"
#include "core/error.hpp"
#include "jobs/serve_jobs.hpp"

namespace magpie::app {

template <class T>
CLI::Option* ServeOptions::add(CLI::App* sub, const char* name, T& value, const char* help,
                               const char* group) {
  auto* opt = sub->add_option(name, value, help)->group(group);
  options_.emplace_back(opt, static_cast<void*>(&value));
  return opt;
}

CLI::Option* ServeOptions::find(const void* field) const {
  for (const auto& [opt, ptr] : options_)
    if (ptr == field) return opt;
  return nullptr;
}

void ServeOptions::register_with(CLI::App* sub) {
  const char* magpie = "Serving benchmark (Magpie-compatible)";
  const char* ours = "Serving benchmark: client and server";
  add(sub, "-b,--benchmark-config", config_path_,
      "Benchmark YAML (docs/MAGPIE_COMPATIBILITY.md §3)", magpie)
      ->check(CLI::ExistingFile);
  add(sub, "-m,--model", model_, "Model id or local path", magpie);
  add(sub, "-p,--precision", precision_, "fp8|fp16|bf16|fp4|mxfp4|mxfp8|w4a16 (default fp8)", magpie);
  add(sub, "--tp", tp_, "Tensor parallel size (default 1)", magpie);
  add(sub, "--concurrency", concurrency_, "Max concurrency (default 32); a list 4,8 sweeps",
      magpie);
  add(sub, "--input-len", input_len_, "Input tokens (default 1024)", magpie);
  add(sub, "--output-len", output_len_, "Output tokens (default 512)", magpie);
  auto* tp = sub->add_flag("--torch-profiler", torch_profiler_,
                           "Profile a window with the torch profiler (a diagnostic run)")
                 ->group(magpie);
  options_.emplace_back(tp, &torch_profiler_);
  auto* sp = sub->add_flag("--system-profiler", system_profiler_,
                           "Run the engine under nsys (NVIDIA) or rocprofv3 (AMD); its kernel "
                           "summary goes into the report (local mode; docs/SYSTEM_PROFILER.md)")
                 ->group(magpie);
  options_.emplace_back(sp, &system_profiler_);
  add(sub, "--run-mode", run_mode_, "docker|local|ray (default docker; ray: a job on a Ray cluster)", magpie)
      ->check(CLI::IsMember({"docker", "local", "ray"}));
  add(sub, "--run-kind", run_kind_, "auto|measurement|diagnostic", magpie)
      ->check(CLI::IsMember({"auto", "measurement", "diagnostic"}));
  add(sub, "--docker-image", docker_image_, "Image (default: by framework and GPU arch)", magpie);
  add(sub, "--timeout", timeout_, "Overall timeout in seconds (default 3600)", magpie);

  add(sub, "--endpoint", endpoint_, "Benchmark a server that is already running (http://host:port)",
      ours);
  add(sub, "--request-rate", request_rate_, "Requests/s (inf = all at once); a list 1,2,inf sweeps",
      ours);
  add(sub, "--burstiness", burstiness_, "Gamma shape of arrival gaps (1 = Poisson)", ours);
  add(sub, "--num-prompts", num_prompts_, "Measured requests per case (default CONC×10)", ours);
  add(sub, "--duration", duration_, "Send for this many seconds instead of --num-prompts", ours);
  add(sub, "--warmups", warmups_, "Warm-up requests (default 2×concurrency)", ours);
  add(sub, "--range-ratio", range_ratio_, "Random lengths within ±ratio (default 0.5)", ours);
  add(sub, "--prefix-len", prefix_len_, "Shared prefix tokens on every random prompt (with --prefix-pool: each pool prefix's length)", ours);
  add(sub, "--slo", slo_, "SLOs each case is checked against: \"ttft_p99<=2s,tpot_p50<=50ms\"", ours);
  add(sub, "--rate-ramp", rate_ramp_,
      "Ramp the request rate during each case: linear:FROM,TO,SECONDS[,WINDOWS] or\n"
      "steps:FROM,TO,SECONDS,N (req/s; e.g. steps:5,40,60,8). The report's cases[].ramp has\n"
      "each step's (or window's) offered rate, throughput, latencies and --slo verdict", ours);
  add(sub, "--concurrency-ramp", concurrency_ramp_,
      "Ramp the cap on requests in flight during each case (closed loop, freed slots refilled\n"
      "at once): linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N (whole numbers;\n"
      "e.g. steps:1,64,120,7). cases[].ramp has each window's target and measured in-flight\n"
      "count, throughput, latencies and --slo verdict", ours);
  const char* search = "Serving benchmark: SLO search (docs/BENCHMARK_KEYS.md, \"SLO search\")";
  add(sub, "--search", search_,
      "Find the highest request_rate (or concurrency) whose runs meet --slo: double from the\n"
      "range's low end until a probe fails, then bisect to --search-step. Each probe is\n"
      "--search-repeats runs; one within run-to-run noise of a limit gets more runs, then\n"
      "counts as failing (uncertain). Report: slo_search (the curve and the knee).\n"
      "e.g. --slo \"ttft_p99<=2s\" --search request_rate --search-range 1:64",
      search)
      ->check(CLI::IsMember({"request_rate", "concurrency"}));
  add(sub, "--search-range", search_range_, "MIN:MAX values the search may probe (concurrency: whole numbers)", search);
  add(sub, "--search-step", search_step_,
      "The knee's resolution: stop when pass and fail are this close (default: MIN for a rate, 1)", search);
  add(sub, "--search-repeats", search_repeats_, "Runs per probe (default 2)", search);
  add(sub, "--search-max-repeats", search_max_repeats_, "Runs for a probe within noise (default 4)", search);
  add(sub, "--search-noise", search_noise_,
      "Least run-to-run noise assumed, as a fraction (default 0.05: a term within 5% of its limit is uncertain)",
      search);
  add(sub, "--search-max-probes", search_max_probes_, "Budget: values probed at most (default 12)", search);
  add(sub, "--search-max-time", search_max_time_,
      "Budget: seconds after which no new probe starts (default none; --timeout still applies)", search);
  add(sub, "--prefix-pool", prefix_pool_, "A pool of N shared prefixes of --prefix-len tokens", ours);
  add(sub, "--prefix-reuse", prefix_reuse_, "Fraction of requests that start with a pool prefix (default 1)", ours);
  add(sub, "--token-id-max", token_id_max_,
      "Random prompt ids below this (keep under the vocab size)", ours);
  add(sub, "--dataset", dataset_,
      "random|sharegpt|jsonl|synthetic_sessions|sharegpt_sessions|mooncake|timed_jsonl (docs/BENCHMARK_KEYS.md)", ours);
  add(sub, "--dataset-path", dataset_path_, "ShareGPT JSON, JSONL prompts or a Mooncake JSONL trace", ours);
  add(sub, "--turns", turns_, "Sessions: turns per synthetic session (default 4); ShareGPT: at most N", ours);
  add(sub, "--system-prompt-len", system_prompt_len_,
      "Sessions: words of one system prompt shared by every synthetic session", ours);
  add(sub, "--think-time", think_time_,
      "Sessions: seconds between a reply and the next turn: 0.5, exp:0.5 or uniform:0.2,0.8", ours);
  add(sub, "--session-concurrency", session_concurrency_,
      "Sessions under way at once (default CONC; --concurrency still caps requests)", ours);
  add(sub, "--num-sessions", num_sessions_, "Sessions per case (default NUM_PROMPTS)", ours);
  add(sub, "--session-header", session_header_,
      "Sticky sessions: send this header with the session id on every request", ours);
  add(sub, "--trace-speedup", trace_speedup_, "Recorded traffic: replay N times faster (default 1)", ours);
  add(sub, "--api", api_, "completions|chat", ours)->check(CLI::IsMember({"completions", "chat"}));
  add(sub, "--served-model-name", served_model_name_,
      "`model` field of requests (default: /v1/models)", ours);
  add(sub, "--slo-ttft-ms", slo_ttft_, "Goodput SLO on TTFT", ours);
  add(sub, "--slo-tpot-ms", slo_tpot_, "Goodput SLO on TPOT", ours);
  add(sub, "--slo-e2el-ms", slo_e2el_, "Goodput SLO on E2EL", ours);
  add(sub, "--request-timeout", request_timeout_, "Per-request timeout in seconds (default 600)",
      ours);
  add(sub, "--ready-timeout", ready_timeout_, "Seconds to wait for the server (default 2700)",
      ours);
  add(sub, "--seed", seed_, "Dataset and arrival seed", ours);
  add(sub, "--profile-num-prompts", profile_num_prompts_, "Requests in the profiled window", ours);
  add(sub, "--max-model-len", max_model_len_, "MAX_MODEL_LEN for the engine", ours);
  add(sub, "--engine-executable", engine_executable_, "Path to `vllm` (or python for sglang/atom)",
      ours);
  add(sub, "--engine-arg", engine_args_,
      "Extra engine argument (repeatable; '--engine-arg=--flag')", ours)
      ->allow_extra_args(false);
  add(sub, "--env", envs_, "KEY=VALUE for envs (repeatable)", ours)->allow_extra_args(false);
  auto* cpu =
      sub->add_flag("--cpu-engine", cpu_engine_, "The engine runs on CPU: drop GPU-only flags")
          ->group(ours);
  options_.emplace_back(cpu, &cpu_engine_);
  sub->add_flag("--strict", strict_,
                "Unknown keys in the benchmark YAML are errors (exit 2), not warnings")
      ->group(ours);
}

serve::BenchmarkFlags ServeOptions::collect(const std::string& framework,
                                            const std::string& output_dir,
                                            bool output_dir_given) const {
  serve::BenchmarkFlags f;
  auto given = [&](const void* field) {
    auto* o = find(field);
    return o && o->count() > 0;
  };
  auto s = [&](const std::string& v, std::optional<std::string>& out) {
    if (given(&v)) out = v;
  };
  auto d = [&](const double& v, std::optional<double>& out) {
    if (given(&v)) out = v;
  };
  auto i = [&](const int64_t& v, std::optional<int64_t>& out) {
    if (given(&v)) out = v;
  };
  if (!framework.empty()) f.framework = framework;
  if (output_dir_given) f.output_dir = output_dir;
  s(model_, f.model);
  s(precision_, f.precision);
  s(run_mode_, f.run_mode);
  s(run_kind_, f.run_kind);
  s(docker_image_, f.docker_image);
  s(endpoint_, f.endpoint);
  s(concurrency_, f.concurrency);
  s(input_len_, f.input_len);
  s(output_len_, f.output_len);
  s(tp_, f.tp);
  s(request_rate_, f.request_rate);
  s(num_prompts_, f.num_prompts);
  s(dataset_, f.dataset);
  s(dataset_path_, f.dataset_path);
  s(api_, f.api);
  s(range_ratio_, f.range_ratio);
  s(max_model_len_, f.max_model_len);
  s(served_model_name_, f.served_model_name);
  s(engine_executable_, f.engine_executable);
  d(timeout_, f.timeout);
  d(burstiness_, f.burstiness);
  d(duration_, f.duration);
  d(slo_ttft_, f.slo_ttft_ms);
  d(slo_tpot_, f.slo_tpot_ms);
  d(slo_e2el_, f.slo_e2el_ms);
  d(request_timeout_, f.request_timeout);
  d(ready_timeout_, f.ready_timeout);
  i(warmups_, f.warmups);
  i(prefix_len_, f.prefix_len);
  i(prefix_pool_, f.prefix_pool);
  d(prefix_reuse_, f.prefix_reuse);
  i(token_id_max_, f.token_id_max);
  i(profile_num_prompts_, f.profile_num_prompts);
  i(turns_, f.turns);
  i(system_prompt_len_, f.system_prompt_len);
  i(session_concurrency_, f.session_concurrency);
  i(num_sessions_, f.num_sessions);
  s(think_time_, f.think_time);
  s(slo_, f.slo);
  s(search_, f.search);
  s(rate_ramp_, f.rate_ramp);
  s(concurrency_ramp_, f.concurrency_ramp);
  s(search_range_, f.search_range);
  d(search_step_, f.search_step);
  d(search_noise_, f.search_noise);
  d(search_max_time_, f.search_max_time);
  i(search_repeats_, f.search_repeats);
  i(search_max_repeats_, f.search_max_repeats);
  i(search_max_probes_, f.search_max_probes);
  s(session_header_, f.session_header);
  d(trace_speedup_, f.trace_speedup);
  if (given(&seed_)) f.seed = seed_;
  if (given(&torch_profiler_)) f.torch_profiler = torch_profiler_;
  if (given(&system_profiler_)) f.system_profiler = system_profiler_;
  if (given(&cpu_engine_)) f.engine_gpu = !cpu_engine_;
  f.extra_engine_args = engine_args_;
  f.envs = envs_;
  return f;
}

int ServeOptions::run(const std::string& framework, const std::string& output_dir,
                      bool output_dir_given, bool verbose, bool html) const {
  auto flags = collect(framework, output_dir, output_dir_given);
  bool from_yaml = !config_path_.empty();
  serve::BenchmarkConfig config =
      from_yaml ? serve::load_benchmark_yaml(config_path_) : serve::BenchmarkConfig{};
  serve::apply_flags(config, flags, from_yaml);
  if (!flags.run_mode && (global_environment_ == "docker" || global_environment_ == "container"))
    config.run_mode = "docker";
  if (!flags.docker_image && !global_docker_image_.empty()) config.docker_image = global_docker_image_;
  reject_unknown_keys(config.unknown_keys, strict_, config_path_);
  for (const auto& w : config.warnings) std::cerr << "warning: " << w << "\n";
  jobs::JobContext context = command_context(verbose);
  context.cancel = &interrupt_flag();
  InterruptScope interrupts;
  auto progress = attach_progress(context);
  progress->set_limit("waiting for the server", config.server_ready_timeout_s,
                      config.endpoint.empty() ? "" : "at " + config.endpoint);
  // The renderer draws the request counts; serve's own live line would fight it.
  context.console = !progress->active() && (context.console || verbose);
  const jobs::ServingBenchmarkOutcome outcome = jobs::run_serving_benchmark(config, context);
  progress->finish();
  // Warnings the run itself added (precision not applied, a reused server).
  for (const auto& w : outcome.report.warnings)
    if (std::find(config.warnings.begin(), config.warnings.end(), w) == config.warnings.end())
      std::cerr << "warning: " << w << "\n";
  std::cout << jobs::console_text(outcome);
  if (html && !outcome.workspace.empty()) {
    auto path = html::write_page(html::serving_page(outcome.workspace),
                                 outcome.workspace / "benchmark_report.html");
    std::cerr << "html report: " << path.string() << "\n";
  }
  return outcome.success ? 0 : 1;
}

}  // namespace magpie::app
