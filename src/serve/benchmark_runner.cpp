#include "serve/benchmark_runner.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>

#include "analysis/tracelens_report.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "serve/benchmark_report.hpp"
#include "serve/dataset.hpp"
#include "serve/engine_launcher.hpp"
#include "serve/http_client.hpp"
#include "serve/load_generator.hpp"
#include "serve/profiling.hpp"
#include "serve/prometheus_scrape.hpp"
#include "serve/request_log.hpp"

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

std::vector<Prompt> make_prompts(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  if (o.dataset == "random") {
    RandomDatasetOptions r;
    r.num_prompts = count;
    r.input_len = w.input_len;
    r.output_len = w.output_len;
    r.range_ratio = w.range_ratio;
    r.prefix_len = o.prefix_len;
    r.token_id_min = o.token_id_min;
    r.token_id_max = o.token_id_max;
    r.seed = o.seed;
    return random_dataset(r);
  }
  FileDatasetOptions f;
  f.num_prompts = count;
  f.seed = o.seed;
  if (o.dataset == "sharegpt") return sharegpt_dataset(o.dataset_path, f);
  return jsonl_dataset(o.dataset_path, f);
}

// A lightweight view of the client's own cost for the report.
nlohmann::json client_overhead_json(const ServingMetrics& m, const LoadResult& r) {
  std::vector<double> lag = r.record_lag_s;
  auto lag_stats = metric_stats(std::move(lag), {50, 99});
  return {
      {"scheduled_to_sent_ms",
       {{"mean", m.client_overhead.mean_ms},
        {"p50", m.client_overhead.percentiles_ms.count(50) ? m.client_overhead.percentiles_ms.at(50)
                                                           : 0.0},
        {"p99", m.client_overhead.percentiles_ms.count(99) ? m.client_overhead.percentiles_ms.at(99)
                                                           : 0.0}}},
      {"read_to_record_ms",
       {{"mean", lag_stats.mean_ms},
        {"p50", lag_stats.percentiles_ms[50]},
        {"p99", lag_stats.percentiles_ms[99]}}},
      {"client_queue_time_ms",
       {{"mean", m.client_queue.mean_ms},
        {"p99",
         m.client_queue.percentiles_ms.count(99) ? m.client_queue.percentiles_ms.at(99) : 0.0}}},
      {"connections_opened", r.connections_opened}};
}

}  // namespace

BenchmarkOutcome run_benchmark(const BenchmarkConfig& c, const RunContext& ctx) {
  auto t_start = std::chrono::steady_clock::now();
  BenchmarkOutcome outcome;
  outcome.workspace = make_workspace(c);
  const auto& ws = outcome.workspace;
  if (ctx.on_workspace) ctx.on_workspace(ws);
  auto& report = outcome.report = empty_report(c.framework, c.model);
  report["workspace_dir"] = ws.string();
  report["timestamp"] = timestamp_now("%Y-%m-%dT%H:%M:%S");
  std::string run_kind = c.resolved_run_kind();
  report["run_kind"] = run_kind;
  report["profiling_enabled"] = c.torch_profiler;
  for (const auto& w : c.warnings) report["warnings"].push_back(w);
  write_file_atomic(ws / "config.yaml", c.config_yaml.empty()
                                            ? "# inline flags; see benchmark_report.json `config`\n"
                                            : c.config_yaml);

  auto cases = c.cases();
  report["config"] = {{"precision", c.precision},
                      {"run_mode", c.endpoint.empty() ? c.run_mode : "endpoint"},
                      {"envs", c.envs},
                      {"num_cases", cases.size()}};
  bool complete = true;
  bool any_case_ok = false;
  auto add_error = [&](const std::string& e) { report["errors"].push_back(e); };
  auto finalize = [&]() {
    report["complete"] = complete;
    report["success"] = any_case_ok && complete && report["errors"].empty();
    report["reward_eligible"] = report["success"].get<bool>() && run_kind == "measurement";
    report["execution_time"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    write_file_atomic(ws / "benchmark_report.json", report.dump(2));
    write_file_atomic(ws / "summary.txt", summary_text(report));
    outcome.success = report["success"].get<bool>();
  };

  std::unique_ptr<EngineServer> server;
  try {
    server = std::make_unique<EngineServer>(plan_launch(c, ws));
    report["server"] = server->describe();
    report["server"]["model_revision"] = model_revision(c.model, c.hf_cache_path);
    if (ctx.progress)
      std::cerr << fmt::format("starting server: {}\n",
                               report["server"].value("command", server->plan().endpoint.url()));
    if (ctx.on_progress) ctx.on_progress(0, std::nullopt, "waiting for the server to become ready");
    std::string served = server->start(c.server_ready_timeout_s, ctx.stop);
    report["server"]["served_model"] = served;
    if (report["model"].get<std::string>().empty()) report["model"] = served;
    std::string model_field =
        c.client.served_model_name.empty() ? served : c.client.served_model_name;
    const auto& endpoint = server->plan().endpoint;

    auto before = scrape_metrics(endpoint);
    bool profiled = false;
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const auto& w = cases[ci];
      fs::path case_dir = cases.size() == 1 ? ws : ws / "cases" / w.label();
      fs::create_directories(case_dir);
      LoadOptions lo;
      lo.endpoint = endpoint;
      lo.request.api = c.client.api;
      lo.request.model = model_field;
      lo.request.ignore_eos = c.client.ignore_eos;
      lo.request.continuous_usage = c.client.continuous_usage;
      bool profile_this = c.torch_profiler && !profiled;
      size_t n = static_cast<size_t>(w.num_prompts);
      if (profile_this && c.client.profile_num_prompts > 0)
        n = static_cast<size_t>(c.client.profile_num_prompts);
      lo.prompts = make_prompts(c.client, w, c.client.duration_s > 0 ? std::max<size_t>(n, 1) : n);
      lo.num_prompts = c.client.duration_s > 0 ? 0 : n;
      lo.duration_s = c.client.duration_s;
      lo.arrivals.request_rate = w.request_rate;
      lo.arrivals.burstiness = c.client.burstiness;
      lo.arrivals.seed = c.client.seed;
      lo.max_concurrency = static_cast<size_t>(w.concurrency);
      lo.warmups = c.client.warmups >= 0 ? static_cast<size_t>(c.client.warmups)
                                         : static_cast<size_t>(2 * w.concurrency);
      lo.request_timeout =
          std::chrono::milliseconds(static_cast<int64_t>(c.client.request_timeout_s * 1000));
      lo.progress = ctx.progress;
      if (ctx.on_progress) {
        lo.on_progress = [&ctx, ci, ncases = cases.size()](size_t done, size_t planned, const std::string& line) {
          // Cases count as equal parts of the run.
          double part = planned ? static_cast<double>(done) / static_cast<double>(planned) : 0.0;
          ctx.on_progress(static_cast<double>(ci) + part, static_cast<double>(ncases),
                          fmt::format("case {}/{}: {}", ci + 1, ncases, line));
        };
      }
      lo.stop = ctx.stop;
      EngineServer* srv = server.get();
      lo.server_alive = [srv] { return srv->alive(); };
      RequestLog log(case_dir / "requests.jsonl");
      lo.on_record = [&log](const RequestRecord& r) { log.write(r, nullptr); };
      std::string profile_error;
      if (profile_this) {
        lo.on_measure_start = [&] { profile_error = start_profile(endpoint); };
      }
      if (ctx.progress)
        std::cerr << fmt::format("case {}/{} {}: {} prompts, concurrency {}, rate {}\n", ci + 1,
                                 cases.size(), w.label(), n, w.concurrency, w.request_rate);
      auto result = run_load(lo);
      log.flush();
      if (server->plan().mode == "endpoint" && !result.server_died && !result.interrupted) {
        // No child to watch: transport failures plus a dead /health mean the
        // server went away mid-run.
        bool transport_failures =
            std::any_of(result.records.begin(), result.records.end(), [](const RequestRecord& r) {
              return r.failure == FailureReason::kConnectFailed ||
                     r.failure == FailureReason::kTransport ||
                     r.failure == FailureReason::kIncompleteStream;
            });
        if (transport_failures &&
            !http_request(endpoint, "GET", endpoint.target("/health"), "", std::chrono::seconds(5))
                 .ok)
          result.server_died = true;
      }
      if (profile_this) {
        profiled = true;
        if (profile_error.empty() && server->alive()) profile_error = stop_profile(endpoint);
        if (!profile_error.empty()) add_error("profiling: " + profile_error);
      }
      MetricsInput mi;
      mi.records = &result.records;
      mi.duration_s = result.duration_s;
      mi.percentiles = c.client.percentiles;
      mi.slo = c.client.slo;
      mi.peak_concurrency = result.peak_concurrency;
      auto m = compute_metrics(mi);
      auto raw = vllm_result_json(m, result.records, true);
      raw["date"] = timestamp_now("%Y%m%d-%H%M%S");
      raw["backend"] = c.client.api == ApiKind::kChat ? "openai-chat" : "vllm";
      raw["endpoint_type"] = raw["backend"];
      raw["model_id"] = model_field;
      raw["num_prompts"] = n;
      raw["request_rate"] =
          std::isinf(w.request_rate) ? nlohmann::json("inf") : nlohmann::json(w.request_rate);
      raw["burstiness"] = c.client.burstiness;
      raw["max_concurrency"] = w.concurrency;
      write_file_atomic(case_dir / "benchmark_serving_result.json", raw.dump(2));
      bool case_complete = !result.server_died && !result.interrupted;
      nlohmann::json cj{
          {"label", w.label()},
          {"concurrency", w.concurrency},
          {"input_len", w.input_len},
          {"output_len", w.output_len},
          {"num_prompts", n},
          {"request_rate",
           std::isinf(w.request_rate) ? nlohmann::json("inf") : nlohmann::json(w.request_rate)},
          {"complete", case_complete},
          {"profiled", profile_this},
          {"throughput", magpie_throughput(m)},
          {"latency", magpie_latency(m)},
          {"failures_by_reason", m.failures_by_reason},
          {"peak_concurrency", m.peak_concurrency},
          {"max_concurrent_requests", m.max_concurrent_requests},
          {"not_sent", result.not_sent},
          {"client", client_overhead_json(m, result)},
          {"raw_result_path", (case_dir / "benchmark_serving_result.json").string()},
          {"requests_path", (case_dir / "requests.jsonl").string()}};
      if (m.itl_per_token.count) cj["latency"]["itl_per_token"] = magpie_latency(m)["itl"];
      report["cases"].push_back(cj);
      if (ci == 0 || !report["throughput"].is_object()) {
        // Magpie's top-level blocks: the first case (the only one without a sweep).
        report["throughput"] = cj["throughput"];
        report["latency"] = cj["latency"];
        report["raw_result"] = vllm_result_json(m, result.records, false);
      }
      if (m.completed > 0) any_case_ok = true;
      if (result.server_died) {
        complete = false;
        auto status = server->exit_status();
        add_error(fmt::format(
            "server died during case {} ({}); {} of {} requests completed, {} failed, {} never "
            "sent; report is partial",
            w.label(), status.empty() ? "no longer answering" : status, m.completed, n, m.failed,
            result.not_sent));
        break;
      }
      if (result.interrupted) {
        complete = false;
        add_error(
            fmt::format("interrupted during case {}; report holds what was measured", w.label()));
        break;
      }
      if (m.completed == 0) {
        add_error(
            fmt::format("case {}: every request failed ({})", w.label(),
                        m.failures_by_reason.empty() ? "?" : m.failures_by_reason.begin()->first));
        if (c.on_failure == "abort") break;
      }
    }
    if (server->alive()) {
      auto after = scrape_metrics(endpoint);
      report["server_metrics"] =
          prometheus_summary(before, after, c.framework == "vllm" ? "vllm:" : "");
    }
    if (c.torch_profiler && profiled) {
      auto trace_dir =
          server->plan().profiler_dir.empty() ? ws / "torch_trace" : server->plan().profiler_dir;
      size_t traces = server->alive() ? wait_for_traces(trace_dir, 180) : 0;
      report["torch_trace_dir"] = trace_dir.string();
      report["torch_trace_files"] = traces;
      if (traces == 0) {
        add_error(fmt::format("profiling: no trace files appeared in {}", trace_dir.string()));
      } else if (c.gap.enabled) {
        auto gap = run_profile_gap_analysis(trace_dir, ws / "gap_analysis", c.gap);
        if (!gap.block.is_null()) report["gap_analysis"] = gap.block;
        report["kernel_summary"] = gap.kernel_summary;
        report["top_bottlenecks"] = gap.top_bottlenecks;
        for (const auto& e : gap.errors) add_error(e);
        for (const auto& nte : gap.notes) report["warnings"].push_back(nte);
      }
    }
    if (c.tracelens) {
      auto trace_dir =
          server->plan().profiler_dir.empty() ? ws / "torch_trace" : server->plan().profiler_dir;
      if (!profiled) {
        report["tracelens_analysis"] = {
            {"enabled", true},
            {"output_files", nlohmann::json::array()},
            {"errors", {"tracelens needs profiler.torch_profiler.enabled"}}};
      } else {
        analysis::TraceLensOptions tl = tracelens_options(c.tracelens_settings);
        tl.trace = trace_dir;
        tl.output_dir = ws;
        if (fs::is_directory(trace_dir / "capture_traces"))
          tl.capture_dir = trace_dir / "capture_traces";
        tl.isl = cases.front().input_len;
        tl.osl = cases.front().output_len;
        tl.conc = cases.front().concurrency;
        try {
          report["tracelens_analysis"] = analysis::tracelens_manifest_json(analysis::run_tracelens(tl));
        } catch (const Error& e) {
          report["tracelens_analysis"] = {
              {"enabled", true}, {"output_files", nlohmann::json::array()}, {"errors", {e.what()}}};
        }
      }
    }
  } catch (const Error& e) {
    add_error(e.what());
    if (server && !server->alive()) complete = false;
    if (report["cases"].empty()) complete = false;
  }
  if (ctx.stop && ctx.stop->load()) complete = false;
  if (server) server->shutdown();
  finalize();
  return outcome;
}

}  // namespace magpie::serve
