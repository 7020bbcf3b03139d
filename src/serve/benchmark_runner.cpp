#include "serve/benchmark_runner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

#include "analysis/tracelens_report.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "serve/benchmark_environment.hpp"
#include "serve/benchmark_report_writer.hpp"
#include "serve/dataset.hpp"
#include "serve/docker_cli.hpp"
#include "serve/engine_command.hpp"
#include "serve/engine_launcher.hpp"
#include "serve/engine_precision.hpp"
#include "serve/gpu_names.hpp"
#include "serve/http_client.hpp"
#include "serve/quality_gate.hpp"
#include "serve/load_generator.hpp"
#include "serve/load_shape.hpp"
#include "serve/model_files.hpp"
#include "serve/profiling.hpp"
#include "serve/prometheus_scrape.hpp"
#include "serve/request_log.hpp"
#include "serve/source_repos.hpp"
#include "serve/system_profiler.hpp"
#include "serve/workload.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

namespace {

std::string timestamp_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

fs::path make_workspace(const BenchmarkConfig& c) {
  auto base = fs::path(c.output_dir) /
              fmt::format("benchmark_{}_{}", c.framework, timestamp_now("%Y%m%d_%H%M%S"));
  fs::path ws = base;
  for (int i = 1; fs::exists(ws); ++i) ws = fs::path(base.string() + "_" + std::to_string(i));
  fs::create_directories(ws);
  return fs::absolute(ws);
}

}  // namespace

std::vector<Prompt> case_prompts(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  return make_workload(o, w, count).prompts;
}

namespace {

// One stop flag for everything below the runner (readiness wait, load
// generator): set by the caller's stop (Ctrl-C, an MCP cancel) or by the
// overall timeout, and it remembers which.
class RunStop {
 public:
  RunStop(const std::atomic<bool>* outer, double timeout_s) : outer_(outer) {
    const bool has_deadline = timeout_s > 0;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    watcher_ = std::thread([this, has_deadline, deadline] {
      std::unique_lock lock(mutex_);
      while (!done_) {
        if (outer_ && outer_->load()) {
          stop_ = true;
        } else if (has_deadline && std::chrono::steady_clock::now() >= deadline) {
          timed_out_ = true;
          stop_ = true;
        }
        if (stop_) break;
        wake_.wait_for(lock, std::chrono::milliseconds(100));
      }
    });
  }
  ~RunStop() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    watcher_.join();
  }
  RunStop(const RunStop&) = delete;
  RunStop& operator=(const RunStop&) = delete;

  const std::atomic<bool>* flag() const { return &stop_; }
  bool stopped() const { return stop_.load(); }
  bool timed_out() const { return timed_out_.load(); }

 private:
  const std::atomic<bool>* outer_;
  std::atomic<bool> stop_{false}, timed_out_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread watcher_;
};

// Settings that turn into the engine's environment and flags: GPU selection,
// precision. Runs before the workspace exists, so a request that cannot be met
// fails without leaving an empty run behind. Returns the GPU locks, held for the run.
GpuLocks resolve_engine_settings(BenchmarkConfig& c, BenchmarkReport& report, const std::atomic<bool>* cancel) {
  const bool endpoint = !c.endpoint.empty();
  GpuLocks locks;
  if (c.gpu_selection) {
    if (endpoint) {
      report.warnings.push_back(
          "gpu_selection is not applied: with --endpoint the server is not launched by magpie");
    } else {
      // The kernel jobs' choice and wait (gpu::select_and_lock): a GPU another
      // magpie run holds is waited for up to gpu_selection.wait_s, not refused.
      auto locked = gpu::select_and_lock(*c.gpu_selection, gpu::query_gpu_inventory, c.tensor_parallel(),
                                         GpuLocks::default_dir(), cancel);
      locks = std::move(locked.locks);
      const GpuSelection chosen = locked.selection;
      c.envs[chosen.env_name] = chosen.env_value;
      // NVML numbers GPUs in PCI bus order; CUDA's default order is fastest
      // first. Same order, so the index chosen is the GPU the engine gets.
      if (chosen.env_name == "CUDA_VISIBLE_DEVICES" && !c.envs.count("CUDA_DEVICE_ORDER"))
        c.envs["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
      report.gpu_selection = chosen;
    }
  }
  if (c.precision_given && !endpoint) {
    auto fw = parse_framework(c.framework);
    const char* extra_key = fw == Framework::kVllm     ? "EXTRA_VLLM_ARGS"
                            : fw == Framework::kSglang ? "EXTRA_SGLANG_ARGS"
                                                       : "EXTRA_ATOM_ARGS";
    std::vector<std::string> given = split_args(c.env(extra_key));
    given.insert(given.end(), c.engine_extra_args.begin(), c.engine_extra_args.end());
    auto p = precision_args(fw, c.precision, given);
    if (!p.warning.empty()) report.warnings.push_back(p.warning);
    c.engine_extra_args.insert(c.engine_extra_args.begin(), p.args.begin(), p.args.end());
    report.config.precision_args = p.args;
  } else if (c.precision_given) {
    report.warnings.push_back(
        "precision is not applied: with --endpoint the server is not launched by magpie");
  }
  return locks;
}

// system_profiler: found before anything starts (a missing tool is
// Error(kNotFound), exit 3); only a local engine magpie launches can be wrapped.
std::optional<SystemProfilerPlan> plan_system_profiler(const BenchmarkConfig& c,
                                                       BenchmarkReport& report) {
  if (!c.system_profiler) return std::nullopt;
  if (!c.endpoint.empty()) {
    report.warnings.push_back(
        "system_profiler is not applied: with --endpoint the server is not launched by magpie");
    return std::nullopt;
  }
  if (c.run_mode != "local")
    throw Error(ErrorKind::kUsage,
                fmt::format("system_profiler wraps a local engine; run_mode {} is not supported",
                            c.run_mode),
                "", std::nullopt,
                "use --run-mode local (the profiler must be installed where the engine runs)");
  return resolve_system_profiler(c.gpu_arch, c.system_profiler_args,
                                 [](const std::string& name) { return find_on_path(name); });
}

// The capture's kernel summary, also as Magpie's kernel_summary when the
// torch profiler gave none.
void fold_system_profile(SystemProfileBlock block, BenchmarkReport& report) {
  for (const auto& e : block.errors) report.errors.push_back(e);
  if (report.kernel_summary.empty()) {
    for (size_t i = 0; i < block.kernels.size() && i < 20; ++i) {
      const auto& k = block.kernels[i];
      report.kernel_summary.push_back({k.name, k.total_ns / 1e6, k.percent, k.instances});
    }
    if (report.top_bottlenecks.empty())
      for (size_t i = 0; i < block.kernels.size() && i < 5; ++i)
        report.top_bottlenecks.push_back(block.kernels[i].name);
  }
  report.system_profiler = std::move(block);
}

// --endpoint names a server the user says is running: nothing listening
// there is said within seconds (Error kUnreachable, exit 7), before the
// workspace exists, instead of after the readiness limit. A server that
// accepts connections but is not ready yet (/health 503) is waited for as before.
void require_listening(const Endpoint& e) {
  HttpResult r;
  const int tries = 3;
  for (int i = 0; i < tries; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    r = http_request(e, "GET", e.target("/health"), "", std::chrono::seconds(5));
    if (!r.refused && !r.unresolved) return;
  }
  throw Error(ErrorKind::kUnreachable,
              fmt::format("nothing answers at {}: GET {} {} times over {} s: {}", e.url(), e.target("/health"),
                          tries, tries - 1, r.error),
              "", std::nullopt,
              r.unresolved
                  ? "check the host name in --endpoint (endpoint: in the YAML)"
                  : fmt::format("start the server first (e.g. `vllm serve MODEL --port {}`) or fix the --endpoint "
                                "address; to have magpie launch the engine and wait for it, pass --model "
                                "without --endpoint",
                                e.port));
}

bool answers_health(const Endpoint& e) {
  auto r = http_request(e, "GET", e.target("/health"), "", std::chrono::seconds(5));
  return r.ok && r.status == 200;
}

// Docker mode, force_reuse: a running container magpie started for this
// framework and model (and PORT, when given) whose engine answers. Returns its name.
std::string reuse_engine_container(BenchmarkConfig& c, BenchmarkReport& report) {
  std::string why;
  for (const auto& found : find_engine_containers(c.framework, c.model, c.port().value_or(0), &why)) {
    if (found.port <= 0) continue;
    Endpoint e;
    e.port = static_cast<uint16_t>(found.port);
    if (!answers_health(e)) continue;
    report.warnings.push_back(fmt::format(
        "server_lifecycle: reusing container {} (image {}) already answering at {} (not launched, "
        "not stopped by magpie)",
        found.name, found.image, e.url()));
    c.endpoint = e.url();
    return found.name;
  }
  if (!why.empty())
    report.warnings.push_back("server_lifecycle.force_reuse: could not list containers: " + why);
  return {};
}

// server_lifecycle: reuse a running server (force_reuse: in docker mode a
// container magpie started, else one answering at PORT), or require one
// (enabled: false). Turns the run into an endpoint run; returns the reused
// container's name, if any.
std::string apply_lifecycle(BenchmarkConfig& c, BenchmarkReport& report) {
  if (!c.lifecycle.cleanup && c.endpoint.empty() && c.run_mode != "docker")
    report.warnings.push_back(
        "server_lifecycle.cleanup: false applies to docker mode only: a local engine is a child "
        "of magpie and is stopped at the end of the run");
  if (!c.endpoint.empty() || (c.lifecycle.enabled && !c.lifecycle.force_reuse)) return {};
  if (c.run_mode == "docker")
    if (auto name = reuse_engine_container(c, report); !name.empty()) return name;
  Endpoint existing;
  existing.port = static_cast<uint16_t>(c.port().value_or(8000));
  if (answers_health(existing)) {
    report.warnings.push_back(
        fmt::format("server_lifecycle: reusing the server already answering at {} (not launched, "
                    "not stopped by magpie)",
                    existing.url()));
    c.endpoint = existing.url();
    return {};
  }
  if (!c.lifecycle.enabled)
    throw Error(
        ErrorKind::kInternal,
        fmt::format("server_lifecycle.enabled is false, so magpie does not launch the engine, and "
                    "nothing answers at {}/health",
                    existing.url()),
        "", std::nullopt, "start the server on PORT first, or set server_lifecycle.enabled: true");
  return {};
}

ServerInfo server_info(const LaunchPlan& plan) {
  ServerInfo s;
  s.mode = plan.mode;
  s.url = plan.endpoint.url();
  s.env = plan.env;
  if (!plan.argv.empty()) s.command = shell_join(plan.argv);
  s.image = plan.image;
  s.container = plan.container_name;
  if (plan.mode != "endpoint") s.log = plan.log_path;
  return s;
}

LoadOptions load_options(const BenchmarkConfig& c, const WorkloadCase& w, size_t n,
                         const Endpoint& endpoint, const std::string& model_field,
                         const RunContext& ctx, const std::atomic<bool>* stop,
                         std::optional<PrefixPlan>* prefix = nullptr) {
  LoadOptions lo;
  lo.endpoint = endpoint;
  lo.request.api = c.client.api;
  lo.request.model = model_field;
  lo.request.ignore_eos = c.client.ignore_eos;
  lo.request.continuous_usage = c.client.continuous_usage;
  // A rate ramp's schedule sets how many requests the case sends.
  std::vector<double> ramp;
  if (c.client.rate_ramp) {
    ramp = ramp_schedule(*c.client.rate_ramp, c.client.burstiness, c.client.seed);
    n = std::max<size_t>(ramp.size(), 1);
  }
  const bool timed = c.client.duration_s > 0 || c.client.concurrency_ramp;
  Workload workload = make_workload(c.client, w, timed ? std::max<size_t>(n, 1) : n);
  lo.prompts = std::move(workload.prompts);
  if (prefix) *prefix = workload.prefix;
  lo.num_prompts = timed ? 0 : n;
  if (!workload.schedule_s.empty()) {
    lo.schedule_s = std::move(workload.schedule_s);
    lo.num_prompts = lo.schedule_s.size();
  }
  if (!ramp.empty()) {
    lo.schedule_s = std::move(ramp);
    lo.num_prompts = lo.schedule_s.size();
  }
  if (!workload.sessions.empty()) {
    lo.sessions = std::move(workload.sessions);
    lo.num_prompts = 0;
    for (const auto& s : lo.sessions) lo.num_prompts += s.turns.size();
    lo.max_sessions = static_cast<size_t>(c.client.sessions.concurrency > 0 ? c.client.sessions.concurrency
                                                                            : w.concurrency);
    lo.session_header = c.client.sessions.header;
  }
  lo.duration_s = c.client.duration_s;
  if (const auto& cr = c.client.concurrency_ramp) {
    lo.duration_s = cr->duration_s;
    lo.concurrency_changes = concurrency_changes(*cr);
  }
  lo.arrivals.request_rate = w.request_rate;
  lo.arrivals.burstiness = c.client.burstiness;
  lo.arrivals.seed = c.client.seed;
  lo.max_concurrency = static_cast<size_t>(w.concurrency);
  lo.warmups = c.client.warmups >= 0 ? static_cast<size_t>(c.client.warmups)
                                     : static_cast<size_t>(2 * w.concurrency);
  lo.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(c.client.request_timeout_s * 1000));
  lo.progress = ctx.progress;
  lo.stop = stop;
  return lo;
}

// Speculative decoding over a case: vLLM's counters, before and after; none when not exposed.
std::optional<SpecDecodeReport> measure_spec_decode(const PrometheusScrape& before, const PrometheusScrape& after) {
  const char* draft_tokens = "vllm:spec_decode_num_draft_tokens";
  if (!before.ok || !after.ok ||
      std::none_of(after.samples.begin(), after.samples.end(),
                   [&](const auto& kv) { return kv.first.rfind(draft_tokens, 0) == 0; }))
    return std::nullopt;
  auto delta = [&](const char* name) { return metric_total(after.samples, name) - metric_total(before.samples, name); };
  SpecDecodeReport r;
  r.drafts = delta("vllm:spec_decode_num_drafts_total");
  r.draft_tokens = delta("vllm:spec_decode_num_draft_tokens_total");
  r.accepted_tokens = delta("vllm:spec_decode_num_accepted_tokens_total");
  if (r.draft_tokens > 0) r.acceptance_rate = r.accepted_tokens / r.draft_tokens;
  if (r.drafts > 0) r.mean_acceptance_length = 1 + r.accepted_tokens / r.drafts;
  return r;
}

// The prefix cache's hit rate over a case: vLLM's token counters, before and after.
PrefixCacheReport measure_prefix_cache(const PrefixPlan& plan, const PrometheusScrape& before,
                                       const PrometheusScrape& after) {
  PrefixCacheReport r;
  r.plan = plan;
  if (!before.ok || !after.ok) {
    r.note = "the server's /metrics could not be read: " + (before.ok ? after.error : before.error);
    return r;
  }
  const char* queries = "vllm:prefix_cache_queries_total";
  const char* hits = "vllm:prefix_cache_hits_total";
  if (std::none_of(after.samples.begin(), after.samples.end(),
                   [&](const auto& kv) { return kv.first.rfind(queries, 0) == 0; })) {
    r.note = "the server exposes no prefix cache counters (vllm:prefix_cache_queries/hits)";
    return r;
  }
  r.queries = metric_total(after.samples, queries) - metric_total(before.samples, queries);
  r.hits = metric_total(after.samples, hits) - metric_total(before.samples, hits);
  if (r.queries > 0) r.measured_hit_rate = r.hits / r.queries;
  else r.note = "the server counted no prefix cache queries during the case";
  return r;
}

// The repeated-capture schedule beside the load: started with the measured
// requests, told when they end, joined before the case is written.
class CaptureThread {
 public:
  std::atomic<bool> load_done{false};
  ~CaptureThread() { finish(); }
  void start(std::function<std::vector<ProfileCapture>()> body) {
    thread_ = std::thread([this, body = std::move(body)] { result_ = body(); });
  }
  std::vector<ProfileCapture> finish() {
    load_done = true;
    if (thread_.joinable()) thread_.join();
    return std::move(result_);
  }

 private:
  std::thread thread_;
  std::vector<ProfileCapture> result_;
};

// Everything after the server is ready: the cases, the profiled window and
// what is made of its traces.
class CaseRunner {
 public:
  // `monitor` (null: gpu_monitor off) gets each case's measured requests as a measuring span.
  CaseRunner(const BenchmarkConfig& c, const RunContext& ctx, const RunStop& stop,
             EngineServer& server, BenchmarkReport& report, bool& complete, bool& any_case_ok,
             GpuMonitor* monitor)
      : c_(c),
        ctx_(ctx),
        stop_(stop),
        server_(server),
        report_(report),
        complete_(complete),
        any_case_ok_(any_case_ok),
        monitor_(monitor) {}

  void run(const std::string& model_field) {
    const auto& endpoint = server_.plan().endpoint;
    auto before = scrape_metrics(endpoint);
    auto cases = c_.cases();
    if (c_.client.search) {
      run_search(cases.front(), model_field);
    } else {
      for (size_t ci = 0; ci < cases.size(); ++ci)
        if (!run_case(cases[ci], ci, cases.size(), cases.size() == 1 ? "" : cases[ci].label(), model_field)) break;
    }
    if (server_.alive() && !stop_.stopped()) {
      report_.server_metrics.emplace(before, scrape_metrics(endpoint));
      report_.server_metrics_prefix = c_.framework == "vllm" ? "vllm:" : "";
    }
    if (stop_.stopped()) return;  // no waiting on traces past the deadline or a cancel
    profile_outputs(cases);
  }

 private:
  // The SLO search: each probe's runs are cases of their own (cases/LABEL_runN).
  void run_search(const WorkloadCase& base, const std::string& model_field) {
    const auto& s = *c_.client.search;
    size_t ci = 0;
    SearchHooks hooks;
    hooks.now_s = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    hooks.on_line = [this](const std::string& line) {
      if (ctx_.progress || !ctx_.on_progress) std::cerr << line << "\n";
      if (ctx_.on_progress) ctx_.on_progress(0, std::nullopt, line);
    };
    hooks.measure = [&](double value, int64_t run_index) -> std::optional<SearchRun> {
      if (stop_.stopped()) return std::nullopt;
      WorkloadCase w = base;
      if (s.variable == SearchVariable::kConcurrency) {
        w.concurrency = static_cast<int64_t>(value);
        if (!w.num_prompts_given) w.num_prompts = w.concurrency * 10;
      } else {
        w.request_rate = value;
      }
      const std::string label = fmt::format("{}_run{}", w.label(), run_index + 1);
      const size_t before = report_.cases.size();
      const bool go_on = run_case(w, ci, ci + 1, label, model_field);
      ++ci;
      if (report_.cases.size() == before || !report_.cases.back().complete) return std::nullopt;
      const auto& cr = report_.cases.back();
      SearchRun run;
      run.case_label = cr.label;
      if (cr.slo) run.slo = *cr.slo;
      run.request_throughput = cr.metrics.request_throughput;
      run.request_goodput = cr.metrics.request_goodput;
      run.completed = static_cast<int64_t>(cr.metrics.completed);
      run.failed = static_cast<int64_t>(cr.metrics.failed);
      if (!go_on) return std::nullopt;
      return run;
    };
    hooks.on_line(fmt::format("slo search: {} in {:g}..{:g}, step {:g}, {} run(s) a probe, SLOs {}",
                              to_string(s.variable), s.min, s.max, s.resolved_step(), s.repeats,
                              slo_text(c_.client.slo_terms)));
    // Filled as it goes: an error mid-search (thrown on to run_benchmark, which
    // records it) leaves the probes measured so far and a status saying why.
    auto& r = report_.slo_search.emplace();
    try {
      run_slo_search(s, hooks, r);
    } catch (...) {
      complete_ = false;  // the search did not finish
      hooks.on_line("slo search: " + knee_line(r));
      throw;
    }
    hooks.on_line("slo search: " + knee_line(r));
    if (r.status == SearchStatus::kNonePass)
      report_.warnings.push_back("slo search: " + knee_line(r));
  }

  // False when the run must end here. `dir_label`: the case's folder under cases/ ("": the workspace).
  bool run_case(WorkloadCase w, size_t ci, size_t ncases, const std::string& dir_label,
                const std::string& model_field) {
    const auto& endpoint = server_.plan().endpoint;
    fs::path case_dir = dir_label.empty() ? report_.workspace_dir : report_.workspace_dir / "cases" / dir_label;
    fs::create_directories(case_dir);
    bool profile_this = c_.torch_profiler && !profiled_;
    size_t n = static_cast<size_t>(w.num_prompts);
    if (profile_this && c_.client.profile_num_prompts > 0)
      n = static_cast<size_t>(c_.client.profile_num_prompts);
    std::optional<PrefixPlan> prefix;
    LoadOptions lo = load_options(c_, w, n, endpoint, model_field, ctx_, stop_.flag(), &prefix);
    if (lo.num_prompts > 0) n = lo.num_prompts;  // a trace's length, or every turn of every session
    if (ctx_.on_progress) {
      lo.on_progress = [this, ci, ncases](size_t done, size_t planned,
                                                         const std::string& line) {
        // Cases count as equal parts of the run.
        double part = planned ? static_cast<double>(done) / static_cast<double>(planned) : 0.0;
        ctx_.on_progress(static_cast<double>(ci) + part, static_cast<double>(ncases),
                         fmt::format("case {}/{}: {}", ci + 1, ncases, line));
      };
    }
    EngineServer* srv = &server_;
    lo.server_alive = [srv] { return srv->alive(); };
    RequestLog log(case_dir / "requests.jsonl");
    lo.on_record = [&log](const RequestRecord& r) { log.write(r, nullptr); };
    std::string profile_error;
    const bool scheduled = profile_this && c_.torch_profiler_settings.scheduled();
    CaptureThread captures;
    // After the warm-ups, just before the first measured send: the profiler's
    // POST first, so the GPU monitor's span does not include its wait.
    PrometheusScrape prefix_before;  // the server's counters (prefix cache, spec decode) before the case
    lo.on_measure_start = [&] {
      // After the warm-ups, so the hit rate and acceptance are the measured requests' own.
      prefix_before = scrape_metrics(endpoint);
      if (scheduled) {
        captures.start([this, &endpoint, &captures] {
          return run_capture_schedule(endpoint, trace_dir(), c_.torch_profiler_settings, c_.framework,
                                      captures.load_done, [this] { return server_.alive(); });
        });
      } else if (profile_this) {
        const int64_t steps = c_.torch_profiler_settings.num_steps;
        profile_error = start_profile(endpoint, steps > 0 ? capture_start_body(c_.framework, 1, steps) : "");
      }
      if (monitor_) monitor_->measuring_begin();
    };
    if (ctx_.progress)
      std::cerr << fmt::format("case {}/{} {}: {} prompts, concurrency {}, rate {}\n", ci + 1,
                               ncases, dir_label.empty() ? w.label() : dir_label, n, w.concurrency, w.request_rate);
    auto result = run_load(lo);
    if (c_.client.concurrency_ramp) n = result.records.size();  // the ramp's SECONDS bound it, not a count
    // run_load returns when the last measured request has finished (or the run
    // was stopped); a case that never reached its measured requests opened no span.
    if (monitor_) monitor_->measuring_end();
    log.flush();
    if (server_.plan().mode == "endpoint" && !result.server_died && !result.interrupted) {
      // No child to watch: transport failures plus a dead /health mean the
      // server went away mid-run.
      bool transport_failures =
          std::any_of(result.records.begin(), result.records.end(), [](const RequestRecord& r) {
            return r.failure == FailureReason::kConnectFailed ||
                   r.failure == FailureReason::kTransport ||
                   r.failure == FailureReason::kIncompleteStream;
          });
      if (transport_failures && !answers_health(endpoint)) result.server_died = true;
    }
    if (scheduled) {
      profiled_ = true;
      report_.profile_captures = captures.finish();
      if (report_.profile_captures.empty())
        report_.errors.push_back("profiling: the measured requests never began; no capture was taken");
    } else if (profile_this) {
      profiled_ = true;
      if (profile_error.empty() && server_.alive()) profile_error = stop_profile(endpoint);
      if (!profile_error.empty()) report_.errors.push_back("profiling: " + profile_error);
    }
    MetricsInput mi;
    mi.records = &result.records;
    mi.duration_s = result.duration_s;
    mi.percentiles = c_.client.percentiles;
    for (double q : slo_percentiles(c_.client.slo_terms))
      if (std::find(mi.percentiles.begin(), mi.percentiles.end(), q) == mi.percentiles.end()) mi.percentiles.push_back(q);
    mi.slo = c_.client.slo;
    // Without per-request limits of its own, goodput counts the requests within the SLOs' limits.
    if (!mi.slo.any()) mi.slo = slo_goodput_limits(c_.client.slo_terms);
    mi.peak_concurrency = result.peak_concurrency;

    CaseReport cr;
    cr.label = dir_label.empty() ? w.label() : dir_label;
    cr.concurrency = w.concurrency;
    cr.input_len = w.input_len;
    cr.output_len = w.output_len;
    cr.num_prompts = static_cast<int64_t>(n);
    cr.request_rate = w.request_rate;
    cr.complete = !result.server_died && !result.interrupted;
    cr.profiled = profile_this;
    cr.metrics = compute_metrics(mi);
    cr.not_sent = result.not_sent;
    cr.client.read_to_record = metric_stats(result.record_lag_s, {50, 99});
    cr.client.connections_opened = result.connections_opened;
    if (!result.server_died) {
      const auto after = scrape_metrics(endpoint);
      if (prefix) cr.prefix_cache = measure_prefix_cache(*prefix, prefix_before, after);
      cr.spec_decode = measure_spec_decode(prefix_before, after);
    }
    if (!c_.client.slo_terms.empty()) cr.slo = evaluate_slo(c_.client.slo_terms, cr.metrics);
    if (const auto& ramp = c_.client.rate_ramp ? c_.client.rate_ramp : c_.client.concurrency_ramp) {
      cr.ramp = ramp_windows(*ramp, result.records, mi.percentiles, mi.slo, c_.client.slo_terms);
      cr.ramp_concurrency = ramp->concurrency;
    }
    cr.raw_result_path = case_dir / "benchmark_serving_result.json";
    cr.requests_path = case_dir / "requests.jsonl";
    write_raw_result(cr, result.records, w, model_field);
    report_.cases.push_back(std::move(cr));
    const auto& m = report_.cases.back().metrics;

    if (m.completed > 0) any_case_ok_ = true;
    if (result.server_died) {
      complete_ = false;
      auto status = server_.exit_status();
      report_.errors.push_back(
          fmt::format("server died during case {} ({}); {} of {} requests completed, {} failed, {} "
                      "never sent; report is partial",
                      w.label(), status.empty() ? "no longer answering" : status, m.completed, n,
                      m.failed, result.not_sent));
      return false;
    }
    if (result.interrupted) {
      complete_ = false;
      report_.errors.push_back(
          stop_.timed_out()
              ? fmt::format("timeout: the run passed timeout_seconds ({:g} s) during case {}; the "
                            "server was "
                            "stopped and the report holds what was measured",
                            c_.timeout_seconds, w.label())
              : fmt::format("interrupted during case {}; report holds what was measured",
                            w.label()));
      return false;
    }
    // The first failure in the server's own words (its message, one line, with the fix when known).
    auto first = std::find_if(result.records.begin(), result.records.end(),
                              [](const RequestRecord& r) { return !r.success; });
    const std::string first_line = first == result.records.end() ? "" : failure_line(*first);
    if (m.completed == 0) {
      report_.errors.push_back(fmt::format(
          "case {}: every request failed ({}){}", w.label(),
          m.failures_by_reason.empty() ? "?" : m.failures_by_reason.begin()->first,
          first_line.empty() ? "" : ": " + first_line));
      if (c_.on_failure == "abort") return false;
    } else if (m.failed > 0) {
      report_.warnings.push_back(fmt::format("case {}: {} of {} requests failed ({}); the first: {}",
                                             w.label(), m.failed, m.completed + m.failed,
                                             m.failures_by_reason.begin()->first, first_line));
    }
    return true;
  }

  // vLLM bench serve's result file for the case (per-request arrays included).
  void write_raw_result(const CaseReport& cr, const std::vector<RequestRecord>& records,
                        const WorkloadCase& w, const std::string& model_field) {
    auto raw = vllm_result_json(cr.metrics, records, true);
    raw["date"] = timestamp_now("%Y%m%d-%H%M%S");
    raw["backend"] = c_.client.api == ApiKind::kChat ? "openai-chat" : "vllm";
    raw["endpoint_type"] = raw["backend"];
    raw["model_id"] = model_field;
    raw["num_prompts"] = cr.num_prompts;
    raw["request_rate"] =
        std::isinf(w.request_rate) ? nlohmann::json("inf") : nlohmann::json(w.request_rate);
    raw["burstiness"] = c_.client.burstiness;
    raw["max_concurrency"] = w.concurrency;
    write_file_atomic(cr.raw_result_path, raw.dump(2));
  }

  fs::path trace_dir() const {
    return server_.plan().profiler_dir.empty() ? report_.workspace_dir / "torch_trace"
                                               : server_.plan().profiler_dir;
  }

  // num_profiles: each capture's own gap analysis, the first analysed one as
  // the report's gap_analysis, and the stability table over all of them.
  void capture_outputs() {
    report_.torch_trace_dir = trace_dir();
    std::vector<analysis::CaptureKernels> kernels;
    bool first = true;
    for (auto& cap : report_.profile_captures) {
      auto& ck = kernels.emplace_back();
      ck.label = cap.label;
      ck.missing_reason = cap.missing_reason;
      report_.torch_trace_files += cap.files;
      if (!cap.missing_reason.empty()) {
        report_.warnings.push_back(fmt::format("profiling: {} is missing: {}", cap.label, cap.missing_reason));
        continue;
      }
      if (!c_.gap.enabled) continue;
      cap.gap_analysis_dir = report_.workspace_dir / "gap_analysis" / cap.label;
      auto gap = run_profile_gap_analysis(cap.dir, cap.gap_analysis_dir, c_.gap);
      cap.errors = gap.errors;
      if (!gap.block) {
        ck.missing_reason = "its gap analysis failed";
        for (const auto& e : gap.errors) report_.errors.push_back(fmt::format("{}: {}", cap.label, e));
        continue;
      }
      cap.kernel_summary = gap.kernel_summary;
      ck.result = gap.block->result;
      if (first) {
        first = false;
        gap.block->notes.push_back(fmt::format("the first analysed capture ({}); profile_captures has them all", cap.label));
        report_.gap_analysis = std::move(gap.block);
        report_.kernel_summary = std::move(gap.kernel_summary);
        report_.top_bottlenecks = std::move(gap.top_bottlenecks);
        for (const auto& note : gap.notes) report_.warnings.push_back(note);
      }
    }
    if (c_.gap.enabled) report_.capture_stability = analysis::capture_stability(kernels, c_.gap.top_k);
  }

  void profile_outputs(const std::vector<WorkloadCase>& cases) {
    if (c_.torch_profiler && profiled_ && c_.torch_profiler_settings.scheduled()) {
      capture_outputs();
    } else if (c_.torch_profiler && profiled_) {
      size_t traces = server_.alive() ? wait_for_traces(trace_dir(), c_.torch_profiler_settings.flush_timeout_seconds) : 0;
      report_.torch_trace_dir = trace_dir();
      report_.torch_trace_files = traces;
      if (traces == 0) {
        report_.errors.push_back(
            fmt::format("profiling: no trace files appeared in {}", trace_dir().string()));
      } else if (c_.gap.enabled) {
        auto gap =
            run_profile_gap_analysis(trace_dir(), report_.workspace_dir / "gap_analysis", c_.gap);
        report_.gap_analysis = std::move(gap.block);
        report_.kernel_summary = std::move(gap.kernel_summary);
        report_.top_bottlenecks = std::move(gap.top_bottlenecks);
        for (const auto& e : gap.errors) report_.errors.push_back(e);
        for (const auto& note : gap.notes) report_.warnings.push_back(note);
      }
    }
    if (!c_.tracelens) return;
    TraceLensBlock block;
    if (!profiled_) {
      block.errors.push_back("tracelens needs profiler.torch_profiler.enabled");
    } else {
      analysis::TraceLensOptions tl = tracelens_options(c_.tracelens_settings);
      tl.trace = trace_dir();
      // Repeated captures: TraceLens reads the first one that has files.
      for (const auto& cap : report_.profile_captures)
        if (cap.files > 0) {
          tl.trace = cap.dir;
          break;
        }
      tl.output_dir = report_.workspace_dir;
      if (fs::is_directory(trace_dir() / "capture_traces"))
        tl.capture_dir = trace_dir() / "capture_traces";
      tl.isl = cases.front().input_len;
      tl.osl = cases.front().output_len;
      tl.conc = cases.front().concurrency;
      try {
        block.result = analysis::run_tracelens(tl);
      } catch (const Error& e) {
        block.errors.push_back(e.what());
      }
    }
    report_.tracelens = std::move(block);
  }

  const BenchmarkConfig& c_;
  const RunContext& ctx_;
  const RunStop& stop_;
  EngineServer& server_;
  BenchmarkReport& report_;
  bool& complete_;
  bool& any_case_ok_;
  GpuMonitor* monitor_;
  bool profiled_ = false;
};

// Docker mode: a container left running (cleanup: false) or not removed is said
// in the report and on the console.
void note_container_fate(const EngineServer& server, BenchmarkReport& report) {
  const auto& plan = server.plan();
  if (!server.left_running().empty()) {
    if (report.server) report.server->left_running = true;
    report.warnings.push_back(
        fmt::format("server_lifecycle.cleanup is false: container {} is left running at {}; "
                    "server_lifecycle.force_reuse: true reuses it, `docker stop {}` stops it (it "
                    "is then removed)",
                    plan.container_name, plan.endpoint.url(), plan.container_name));
  }
  if (!server.cleanup_problem().empty())
    report.errors.push_back("docker: the engine container was not removed: " +
                            server.cleanup_problem());
}

void finalize(BenchmarkReport& report, bool complete, bool any_case_ok, const RunStop& stop,
              std::chrono::steady_clock::time_point t_start) {
  report.complete = complete;
  report.success = any_case_ok && complete && report.errors.empty();
  report.reward_eligible = report.success && report.run_kind == "measurement";
  if (stop.timed_out())
    report.status = RunStatus::kTimeout;
  else if (stop.stopped())
    report.status = RunStatus::kCancelled;
  else if (report.success)
    report.status = RunStatus::kSuccess;
  else
    report.status = complete ? RunStatus::kFailed : RunStatus::kIncomplete;
  report.execution_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
}

}  // namespace

namespace {

// After the timed cases, on the same server: lm-eval scores it (quality_gate.hpp).
// The timings are already measured; a failed evaluation is an error of the run,
// never a loss of what was timed.
void run_quality_step(const QualitySettings& quality, const std::string& lm_eval, EngineServer& server,
                      const std::string& model, const fs::path& ws, const RunContext& ctx, RunStop& stop,
                      bool any_case_ok, BenchmarkReport& report) {
  std::string skip = !any_case_ok       ? "no timed case succeeded"
                     : stop.stopped()   ? "the run was stopped"
                     : !server.alive()  ? "the server is not running"
                                        : "";
  if (!skip.empty()) {
    report.quality_gate = quality_gate_json(ws, true, {"lm_eval not run: " + skip});
  } else {
    if (ctx.on_progress) ctx.on_progress(0, std::nullopt, "accuracy gate: lm-eval on the served model");
    if (ctx.progress || !ctx.on_progress)
      std::cerr << fmt::format("accuracy gate: lm-eval {} on {}\n", fmt::join(quality.tasks, ","),
                               server.plan().endpoint.url());
    report.quality_gate =
        run_quality_gate(quality, lm_eval, server.plan().endpoint.url(), model, ws, stop.flag());
  }
  if ((*report.quality_gate)["passed"] != true)
    for (const auto& e : (*report.quality_gate)["errors"]) report.errors.push_back("quality_gate: " + e.get<std::string>());
}

}  // namespace

BenchmarkOutcome run_benchmark(const BenchmarkConfig& config, const RunContext& ctx) {
  auto t_start = std::chrono::steady_clock::now();
  BenchmarkConfig c = config;  // engine settings below add env and flags
  BenchmarkOutcome outcome;
  auto& report = outcome.report;
  report.warnings = c.warnings;
  std::optional<SystemProfilerPlan> system_profiler = plan_system_profiler(c, report);
  GpuLocks gpu_locks = resolve_engine_settings(c, report, ctx.stop);
  // Before anything starts: a repository that cannot be cloned ends the run
  // here, with nothing measured to lose.
  if (c.torch_profiler && c.gap.enabled && c.gap.find_kernel_sources) {
    SourceRepos repos = prepare_source_repos(c.gap, ctx.stop);
    c.gap.kernel_source_repos = std::move(repos.paths);
    report.warnings.insert(report.warnings.end(), repos.notes.begin(), repos.notes.end());
  }
  // A dataset file that cannot be read (a malformed trace line, a ShareGPT file
  // without a user turn) ends the run here, naming the file and line, before
  // anything starts (exit 3 or 5).
  if (workload_kind(c.client.dataset).needs_path) {
    const auto first = c.cases().front();
    for (auto& note : make_workload(c.client, first, static_cast<size_t>(first.num_prompts)).notes)
      report.warnings.push_back(std::move(note));
  }
  // The accuracy gate needs lm-eval: missing, the run stops here (exit 3), before any timing.
  const QualitySettings quality = c.quality_settings();
  const std::string lm_eval = quality.requested ? resolve_lm_eval(quality) : "";
  if (!c.endpoint.empty()) require_listening(Endpoint::parse(c.endpoint));
  // The model's vocabulary bounds random token ids: known now from a local
  // folder or the HF cache, else from the server's model card once it is ready.
  std::optional<ModelVocab> vocab;
  const bool token_id_prompts = workload_kind(c.client.dataset).token_ids;
  if (token_id_prompts) {
    vocab = model_vocab(c.model, c.hf_cache_path);
    if (vocab) report.config.token_ids = fit_token_ids(c.client, vocab->size, vocab->config_path.string());
  }

  outcome.workspace = make_workspace(c);
  const auto& ws = outcome.workspace;
  if (ctx.on_workspace) ctx.on_workspace(ws);
  report.framework = c.framework;
  report.model = c.model;
  report.workspace_dir = ws;
  report.timestamp = timestamp_now("%Y-%m-%dT%H:%M:%S");
  report.run_kind = c.resolved_run_kind();
  report.profiling_enabled = c.torch_profiler;
  write_file_atomic(ws / "config.yaml", c.config_yaml.empty()
                                            ? "# inline flags; see benchmark_report.json `config`\n"
                                            : c.config_yaml);
  report.config.precision = c.precision;
  report.config.envs = c.envs;
  report.config.num_cases = c.cases().size();
  for (auto& w : check_workload_knobs(c.client, c.cases())) report.warnings.push_back(std::move(w));
  report.config.timeout_seconds = c.timeout_seconds;
  if (system_profiler) {
    system_profiler->output_dir = ws / "system_profile";
    fs::create_directories(system_profiler->output_dir);
  }

  RunStop stop(ctx.stop, c.timeout_seconds);
  // The GPU monitor covers the workload: from the server being ready to the
  // last case, so its ranges are not diluted by model loading or shutdown.
  std::optional<GpuMonitor> monitor;
  auto start_monitor = [&] {
    if (!c.gpu_monitor.enabled) return;
    std::vector<int> indices =
        report.gpu_selection ? report.gpu_selection->indices : std::vector<int>{};
    monitor.emplace(c.gpu_monitor, std::move(indices), ws / "gpu_monitor.csv");
  };
  bool complete = true;
  bool any_case_ok = false;
  std::unique_ptr<EngineServer> server;
  try {
    std::string reused_container = apply_lifecycle(c, report);
    report.config.run_mode = c.endpoint.empty() ? c.run_mode : "endpoint";
    LaunchPlan plan = plan_launch(c, ws);
    if (system_profiler && plan.mode != "local") {
      report.warnings.push_back("system_profiler is not applied: server_lifecycle reused a "
                                "server magpie did not launch");
      system_profiler.reset();
    }
    if (system_profiler) plan.argv = system_profiler_argv(*system_profiler, plan.argv);
    server = std::make_unique<EngineServer>(std::move(plan));
    report.server = server_info(server->plan());
    if (!reused_container.empty()) report.server->container = reused_container;
    report.server->model_revision = model_revision(c.model, c.hf_cache_path);
    if (ctx.progress)
      std::cerr << fmt::format("starting server: {}\n", report.server->command.empty()
                                                            ? report.server->url
                                                            : report.server->command);
    if (ctx.on_progress) ctx.on_progress(0, std::nullopt, "waiting for the server to become ready");
    // Each failed probe: the line (and the MCP progress) says what the wait is on.
    auto on_attempt = [&ctx](const std::string& last) {
      if (ctx.on_progress)
        ctx.on_progress(0, std::nullopt,
                        "waiting for the server to become ready: last error: " + last);
    };
    // One plain line, also when stderr is a file: a long wait is never silent.
    // (A terminal's live line shows the same with its clock.)
    if (!ctx.on_progress || ctx.progress)
      std::cerr << fmt::format("waiting up to {:g} s for the server at {} to become ready (--ready-timeout)\n",
                               c.server_ready_timeout_s, server->plan().endpoint.url());
    std::string served = server->start(c.server_ready_timeout_s, stop.flag(), on_attempt);
    report.server->served_model = served;
    if (token_id_prompts && !vocab) {
      vocab = model_vocab_from_card(server->model_card(), c.hf_cache_path);
      report.config.token_ids =
          fit_token_ids(c.client, vocab ? std::optional(vocab->size) : std::nullopt,
                        vocab ? vocab->config_path.string() : "");
    }
    if (report.server->mode == "docker" && !report.server->image.empty()) {
      std::string why;
      report.server->image_digest = image_digest(report.server->image, &why);
      if (!why.empty()) report.warnings.push_back("environment: image digest not read: " + why);
    }
    if (report.model.empty()) report.model = served;
    if (const std::string rev = c.env("MODEL_REVISION"); !rev.empty()) {
      // Before any timing: a run of other weights than the pinned ones measures nothing asked for.
      RevisionCheck check = check_model_revision(c.model, rev, c.hf_cache_path);
      if (server->plan().mode != "local" && server->plan().mode != "docker") {
        check.status = "unverifiable";
        check.detail = "the server was not launched by magpie, so it was not given --revision";
      }
      write_file_atomic(ws / "model_revision_receipt.json", revision_receipt_json(check).dump(2));
      if (check.status == "mismatch") throw Error(ErrorKind::kRejected, "envs.MODEL_REVISION: " + check.detail);
      if (check.status == "match") report.server->model_revision = check.commit;
      else report.warnings.push_back("envs.MODEL_REVISION: not checked: " + check.detail);
    }
    std::string model_field =
        c.client.served_model_name.empty() ? served : c.client.served_model_name;
    start_monitor();
    CaseRunner(c, ctx, stop, *server, report, complete, any_case_ok, monitor ? &*monitor : nullptr)
        .run(model_field);
    if (quality.requested) run_quality_step(quality, lm_eval, *server, model_field, ws, ctx, stop, any_case_ok, report);
  } catch (const Error& e) {
    report.errors.push_back(
        stop.timed_out() ? fmt::format("timeout: the run passed timeout_seconds ({:g} s): {}",
                                       c.timeout_seconds, e.what())
                         : std::string(e.what()));
    if (server && !server->alive()) complete = false;
    if (report.cases.empty()) complete = false;
  }
  if (stop.stopped()) complete = false;
  if (monitor) {
    report.gpu_monitor = monitor->finish();
    // As analyze/compare: throttling while measuring is a warning (report and console).
    for (const auto& w : gpu::throttle_warnings(report.gpu_monitor->throttle))
      report.warnings.push_back("gpu_monitor: " + w);
  } else if (c.gpu_monitor.enabled) {
    GpuMonitorSummary never;
    never.interval_s = c.gpu_monitor.interval_s;
    never.reason = "not started: the run ended before the server was ready";
    report.gpu_monitor = never;
  }
  const bool nsys = system_profiler && system_profiler->tool == SystemProfilerTool::kNsys;
  const bool profile_ran = system_profiler && server && !stop.stopped();
  if (system_profiler && !profile_ran)
    report.errors.push_back("system_profiler: capture not read: the run ended early");
  // nsys ends its capture while the engine runs; rocprofv3 writes when it exits.
  if (profile_ran && nsys) fold_system_profile(finish_system_profile(*system_profiler, server->alive()), report);
  if (server) {
    server->shutdown();
    note_container_fate(*server, report);
  }
  if (profile_ran && !nsys) fold_system_profile(finish_system_profile(*system_profiler, false), report);
  report.environment = capture_benchmark_environment(report);
  finalize(report, complete, any_case_ok, stop, t_start);
  write_report_files(report, ws);
  outcome.success = report.success;
  return outcome;
}

}  // namespace magpie::serve
