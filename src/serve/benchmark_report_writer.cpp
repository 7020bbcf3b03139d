#include "serve/benchmark_report_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/file_io.hpp"
#include "gpu/gpu_run_json.hpp"

namespace magpie::serve {

using nlohmann::json;

std::string to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kSuccess:
      return "success";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kIncomplete:
      return "incomplete";
    case RunStatus::kTimeout:
      return "timeout";
    case RunStatus::kCancelled:
      return "cancelled";
  }
  return "failed";
}

namespace {

double percentile_or_zero(const MetricStats& s, double p) {
  auto it = s.percentiles_ms.find(p);
  return it == s.percentiles_ms.end() ? 0.0 : it->second;
}

json stats_block(const MetricStats& s) {
  json j{{"mean_ms", s.mean_ms},
         {"median_ms", s.median_ms},
         {"p99_ms", percentile_or_zero(s, 99.0)},
         {"std_ms", s.std_ms}};
  for (auto [p, v] : s.percentiles_ms)  // ours: every requested percentile
    if (p != 99.0) j[fmt::format("p{:g}_ms", p)] = v;
  return j;
}

json rate_json(double rate) { return std::isinf(rate) ? json("inf") : json(rate); }

json client_json(const CaseReport& c) {
  const auto& m = c.metrics;
  return {{"scheduled_to_sent_ms",
           {{"mean", m.client_overhead.mean_ms},
            {"p50", percentile_or_zero(m.client_overhead, 50)},
            {"p99", percentile_or_zero(m.client_overhead, 99)}}},
          {"read_to_record_ms",
           {{"mean", c.client.read_to_record.mean_ms},
            {"p50", percentile_or_zero(c.client.read_to_record, 50)},
            {"p99", percentile_or_zero(c.client.read_to_record, 99)}}},
          {"client_queue_time_ms",
           {{"mean", m.client_queue.mean_ms}, {"p99", percentile_or_zero(m.client_queue, 99)}}},
          {"send_lateness_ms",
           {{"mean", m.send_lateness.mean_ms},
            {"p50", percentile_or_zero(m.send_lateness, 50)},
            {"p99", percentile_or_zero(m.send_lateness, 99)}}},
          {"connections_opened", c.client.connections_opened}};
}

json case_json(const CaseReport& c) {
  json latency = latency_json(c.metrics);
  if (c.metrics.itl_per_token.count)
    latency["itl_per_token"] = stats_block(c.metrics.itl_per_token);
  json turns = json::array();
  for (const auto& t : c.metrics.by_turn)
    turns.push_back({{"turn", t.turn},
                     {"completed", t.completed},
                     {"failed", t.failed},
                     {"mean_input_tokens", t.mean_input_tokens},
                     {"ttft", stats_block(t.ttft)}});
  json j{{"label", c.label},
          {"concurrency", c.concurrency},
          {"input_len", c.input_len},
          {"output_len", c.output_len},
          {"num_prompts", c.num_prompts},
          {"request_rate", rate_json(c.request_rate)},
          {"complete", c.complete},
          {"profiled", c.profiled},
          {"throughput", throughput_json(c.metrics)},
          {"latency", std::move(latency)},
          {"failures_by_reason", c.metrics.failures_by_reason},
          {"peak_concurrency", c.metrics.peak_concurrency},
          {"max_concurrent_requests", c.metrics.max_concurrent_requests},
          {"not_sent", c.not_sent},
          {"client", client_json(c)},
          {"raw_result_path", c.raw_result_path.string()},
          {"requests_path", c.requests_path.string()}};
  if (!turns.empty()) j["turns"] = std::move(turns);
  if (const auto& rm = c.metrics.reasoning)
    j["reasoning"] = {{"requests", rm->requests},
                      {"reasoning_tokens", rm->reasoning_tokens},
                      {"requests_with_output", rm->first_output.count},  // the rest only reasoned
                      {"first_reasoning_token", stats_block(rm->first_reasoning)},
                      {"first_output_token", stats_block(rm->first_output)}};
  if (const auto& sd = c.spec_decode)
    j["spec_decode"] = {{"drafts", sd->drafts},
                        {"draft_tokens", sd->draft_tokens},
                        {"accepted_tokens", sd->accepted_tokens},
                        {"acceptance_rate", sd->acceptance_rate ? json(*sd->acceptance_rate) : json(nullptr)},
                        {"mean_acceptance_length",
                         sd->mean_acceptance_length ? json(*sd->mean_acceptance_length) : json(nullptr)}};
  if (const auto& pc = c.prefix_cache) {
    json p{{"pool", pc->plan.pool},
           {"prefix_len", pc->plan.prefix_len},
           {"target_reuse", pc->plan.target_reuse},
           {"requests", pc->plan.requests},
           {"requests_with_pool_prefix", pc->plan.reusing},
           {"expected_hit_rate", pc->plan.expected_hit_rate},
           {"measured_hit_rate", pc->measured_hit_rate ? json(*pc->measured_hit_rate) : json(nullptr)},
           {"queried_tokens", pc->queries},
           {"hit_tokens", pc->hits}};
    if (!pc->note.empty()) p["note"] = pc->note;
    j["prefix_cache"] = std::move(p);
  }
  if (!c.ramp.empty()) {
    json windows = json::array();
    for (const auto& w : c.ramp) {
      const auto& m = w.metrics;
      json win{{"from_s", w.from_s}, {"to_s", w.to_s}};
      if (c.ramp_concurrency) {
        win["target_concurrency"] = w.target_concurrency;
        win["mean_in_flight"] = w.mean_in_flight;
      } else {
        win["offered_rate"] = w.offered_rate;
      }
      win.update(json{{"requests", m.completed + m.failed},
               {"completed", m.completed},
               {"failed", m.failed},
               {"request_throughput", m.request_throughput},
               {"request_goodput", m.request_goodput},
               {"ttft_median_ms", m.ttft.median_ms},
               {"ttft_p99_ms", percentile_or_zero(m.ttft, 99)},
               {"tpot_median_ms", m.tpot.median_ms},
               {"e2el_p99_ms", percentile_or_zero(m.e2el, 99)}});
      if (w.slo) {
        json terms = json::array();
        for (const auto& ch : w.slo->checks)
          terms.push_back({{"term", ch.term.text}, {"value_ms", ch.value_ms}, {"met", ch.met}});
        win["slo"] = {{"met", w.slo->met}, {"terms", std::move(terms)}};
      }
      windows.push_back(std::move(win));
    }
    j["ramp"] = std::move(windows);
  }
  if (const auto& slo = c.slo) {
    json terms = json::array();
    for (const auto& ch : slo->checks)
      terms.push_back({{"term", ch.term.text}, {"limit_ms", ch.term.limit_ms}, {"value_ms", ch.value_ms}, {"met", ch.met}});
    j["slo"] = {{"met", slo->met}, {"terms", std::move(terms)}};
  }
  return j;
}

}  // namespace

const CaseReport* headline_case(const BenchmarkReport& report) {
  if (report.cases.empty()) return nullptr;
  if (const auto& ss = report.slo_search; ss && ss->highest_pass)
    for (const auto& p : ss->probes)
      if (p.value == *ss->highest_pass && p.verdict == ProbeVerdict::kPass && !p.runs.empty())
        for (const auto& c : report.cases)
          if (c.label == p.runs.front().case_label) return &c;
  return &report.cases.front();
}

namespace {

json slo_search_json(const SloSearchResult& r) {
  const auto& s = r.settings;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json probes = json::array();
  for (const auto& p : r.probes) {
    json terms = json::array();
    for (const auto& t : p.terms)
      terms.push_back({{"term", t.term.text},
                       {"limit_ms", t.term.limit_ms},
                       {"value_ms", t.value_ms},
                       {"values_ms", t.values_ms},
                       {"noise_floor", t.noise_floor},
                       {"verdict", to_string(t.verdict)},
                       {"reason", t.reason}});
    json runs = json::array();
    for (const auto& run : p.runs) runs.push_back(run.case_label);
    probes.push_back({{"value", p.value},
                      {"verdict", to_string(p.verdict)},
                      {"request_throughput", p.request_throughput},
                      {"request_goodput", p.request_goodput},
                      {"runs", std::move(runs)},
                      {"terms", std::move(terms)}});
  }
  json j{{"variable", to_string(s.variable)},
          {"range", {s.min, s.max}},
          {"step", s.resolved_step()},
          {"repeats", s.repeats},
          {"max_repeats", s.max_repeats},
          {"noise", s.noise},
          {"max_probes", s.max_probes},
          {"max_time_s", s.max_time_s},
          {"status", to_string(r.status)},
          {"knee", {{"highest_pass", opt(r.highest_pass)}, {"lowest_fail", opt(r.lowest_fail)}}},
          {"summary", knee_line(r)},
          {"elapsed_s", r.elapsed_s},
          {"probes", std::move(probes)}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

json server_json(const ServerInfo& s) {
  json env = json::object();
  for (const auto& [k, v] : s.env) env[k] = v;
  json j{{"mode", s.mode}, {"url", s.url}, {"env", env}, {"model_revision", s.model_revision}};
  if (!s.command.empty()) j["command"] = s.command;
  if (!s.image.empty()) j["image"] = s.image;
  if (!s.container.empty()) j["container"] = s.container;
  if (s.left_running) j["left_running"] = true;
  if (!s.image_digest.empty()) j["image_digest"] = s.image_digest;
  if (!s.log.empty()) j["log"] = s.log.string();
  if (!s.served_model.empty()) j["served_model"] = s.served_model;
  return j;
}

json tracelens_json(const TraceLensBlock& t) {
  if (t.result) return analysis::tracelens_manifest_json(*t.result);
  return {{"enabled", true}, {"output_files", json::array()}, {"errors", t.errors}};
}

json gap_json(const GapAnalysisBlock& g) {
  json j = analysis::gap_analysis_json(g.result, g.files);
  for (const auto& note : g.notes) j["notes"].push_back(note);
  return j;
}

std::string environment_text(const gpu::EnvironmentSnapshot& e) {
  std::string commit = e.build_commit.substr(0, 12) + (e.build_dirty ? "+dirty" : "");
  std::string out = "\nEnvironment:\n";
  out += fmt::format("  Magpie: {} (git {})\n", e.magpie_version, commit);
  if (!e.model.empty())
    out += fmt::format("  Model: {} (revision {})\n", e.model,
                       e.model_revision.empty() ? "unknown" : e.model_revision);
  if (!e.image.empty())
    out += fmt::format("  Image: {}{}\n", e.image,
                       e.image_digest.empty() ? "" : " (" + e.image_digest + ")");
  if (e.gpus.empty()) out += "  GPUs: none found\n";
  for (const auto& g : e.gpus) out += fmt::format("  GPU {}: {}\n", g.index, g.name);
  return out;
}

json system_profiler_json(const SystemProfileBlock& b) {
  json kernels = json::array();
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  for (const auto& k : b.kernels)
    kernels.push_back({{"name", k.name},
                       {"percent", k.percent},
                       {"total_ns", k.total_ns},
                       {"instances", k.instances},
                       {"avg_ns", opt(k.avg_ns)},
                       {"med_ns", opt(k.med_ns)},
                       {"min_ns", opt(k.min_ns)},
                       {"max_ns", opt(k.max_ns)},
                       {"stddev_ns", opt(k.stddev_ns)}});
  return {{"enabled", true},
          {"tool", b.tool},
          {"command", b.command},
          {"capture", b.capture.string()},
          {"kernel_csv", b.kernel_csv.empty() ? json(nullptr) : json(b.kernel_csv.string())},
          {"kernels", kernels},
          {"errors", b.errors}};
}

json selection_json(const GpuSelection& s) {
  return {{"indices", s.indices},
          {"names", s.names},
          {"env", {{s.env_name, s.env_value}}},
          {"reason", s.reason}};
}

// summary.txt's throttle lines: the findings over the measuring window, or
// why there are none (the report's warnings carry the same throttled lines).
std::string throttle_text(const gpu::ThrottleWindow& w) {
  if (!w.reasons_reported)
    return "  note: the driver reports no clocks event reasons; throttling was not checked\n";
  const std::string head = fmt::format("  Throttling {} ({:.1f}-{:.1f} s, {} span{}):",
                                       w.marked ? "while measuring" : "during the run", w.from_s,
                                       w.to_s, w.spans.size(), w.spans.size() == 1 ? "" : "s");
  auto lines = gpu::throttle_warnings(w);
  if (lines.empty()) return head + " none\n";
  std::string out = head + "\n";
  for (const auto& line : lines) out += "    " + line + "\n";
  return out;
}

json kernel_time_json(const KernelTime& k) {
  return {{"name", k.name}, {"time_ms", k.time_ms}, {"percent", k.percent}, {"calls", k.calls}};
}

json profile_captures_json(const std::vector<ProfileCapture>& captures) {
  json out = json::array();
  for (const auto& c : captures) {
    json kernels = json::array();
    for (const auto& k : c.kernel_summary)
      kernels.push_back(kernel_time_json(k));
    out.push_back({{"label", c.label},
                   {"status", c.analysed() ? "analysed" : !c.missing_reason.empty() ? "missing" : "not_analysed"},
                   {"trace_dir", c.dir.string()},
                   {"trace_files", c.files},
                   {"start_s", c.start_s},
                   {"stop_s", c.stop_s},
                   {"missing_reason", c.missing_reason.empty() ? json() : json(c.missing_reason)},
                   {"note", c.note.empty() ? json() : json(c.note)},
                   {"gap_analysis_dir", c.gap_analysis_dir.empty() ? json() : json(c.gap_analysis_dir.string())},
                   {"kernel_summary", std::move(kernels)},
                   {"errors", c.errors}});
  }
  return out;
}

json capture_stability_json(const analysis::CaptureStability& s) {
  json missing = json::array();
  for (const auto& [label, why] : s.missing) missing.push_back({{"label", label}, {"reason", why}});
  json rows = json::array();
  for (const auto& r : s.rows)
    rows.push_back({{"name", r.name},
                    {"share_pct", r.share_pct},
                    {"min_pct", r.min_pct},
                    {"max_pct", r.max_pct},
                    {"mean_pct", r.mean_pct},
                    {"cv", r.cv}});
  return {{"analysed", s.analysed},
          {"missing", std::move(missing)},
          {"basis", "percent of each capture's kernel time"},
          {"max_spread_pct", s.max_spread_pct},
          {"kernels", std::move(rows)}};
}

}  // namespace

json throughput_json(const ServingMetrics& m) {
  return {{"request_throughput", m.request_throughput},
          {"output_throughput", m.output_throughput},
          {"total_token_throughput", m.total_token_throughput},
          {"completed_requests", m.completed},
          {"total_input_tokens", m.total_input},
          {"total_output_tokens", m.total_output},
          {"duration_seconds", m.duration_s},
          {"failed_requests", m.failed},
          {"request_goodput", m.has_goodput ? json(m.request_goodput) : json()}};
}

json latency_json(const ServingMetrics& m) {
  return {{"ttft", stats_block(m.ttft)},
          {"tpot", stats_block(m.tpot)},
          {"itl", stats_block(m.itl)},
          {"e2el", stats_block(m.e2el)}};
}

json report_json(const BenchmarkReport& r) {
  json j{{"success", r.success},
         {"status", to_string(r.status)},
         {"framework", r.framework},
         {"model", r.model},
         {"timestamp", r.timestamp},
         {"throughput", nullptr},
         {"latency", nullptr},
         {"kernel_summary", json::array()},
         {"top_bottlenecks", r.top_bottlenecks},
         {"tracelens_analysis", nullptr},
         {"gap_analysis", nullptr},
         {"gpu_monitor", nullptr},
         {"environment", nullptr},
         {"workspace_dir", r.workspace_dir.string()},
         {"execution_time", r.execution_time_s},
         {"profiling_enabled", r.profiling_enabled},
         {"run_kind", r.run_kind},
         {"reward_eligible", r.reward_eligible},
         {"errors", r.errors},
         {"complete", r.complete},
         {"warnings", r.warnings},
         {"cases", json::array()}};
  json config{{"precision", r.config.precision},
              {"run_mode", r.config.run_mode},
              {"envs", r.config.envs},
              {"num_cases", r.config.num_cases},
              {"timeout_seconds", r.config.timeout_seconds}};
  if (!r.config.precision_args.empty()) config["precision_args"] = r.config.precision_args;
  if (const auto& t = r.config.token_ids) {
    config["token_ids"] = {{"min", t->min},
                           {"max", t->max},
                           {"vocab_size", t->vocab_size ? json(*t->vocab_size) : json()},
                           {"vocab_from", t->vocab_from.empty() ? json() : json(t->vocab_from)}};
  }
  if (r.gpu_selection) config["gpu_selection"] = selection_json(*r.gpu_selection);
  j["config"] = std::move(config);
  if (r.server) j["server"] = server_json(*r.server);
  for (const auto& c : r.cases) j["cases"].push_back(case_json(c));
  if (const auto& ss = r.slo_search) j["slo_search"] = slo_search_json(*ss);
  if (const CaseReport* head = headline_case(r)) {
    // Magpie's top-level blocks: the first case (the only one without a sweep), a search's knee.
    const auto& m = head->metrics;
    if (r.slo_search) j["slo_search"]["headline_case"] = head->label;
    j["throughput"] = throughput_json(m);
    j["latency"] = latency_json(m);
    j["raw_result"] = vllm_result_json(m, {}, false);
  }
  if (r.server_metrics)
    j["server_metrics"] = prometheus_summary(r.server_metrics->first, r.server_metrics->second,
                                             r.server_metrics_prefix);
  if (r.torch_trace_dir) {
    j["torch_trace_dir"] = r.torch_trace_dir->string();
    j["torch_trace_files"] = r.torch_trace_files;
  }
  for (const auto& k : r.kernel_summary)
    j["kernel_summary"].push_back(kernel_time_json(k));
  if (r.gap_analysis) j["gap_analysis"] = gap_json(*r.gap_analysis);
  if (!r.profile_captures.empty()) j["profile_captures"] = profile_captures_json(r.profile_captures);
  if (r.capture_stability) j["capture_stability"] = capture_stability_json(*r.capture_stability);
  if (r.tracelens) j["tracelens_analysis"] = tracelens_json(*r.tracelens);
  j["system_profiler"] = r.system_profiler ? system_profiler_json(*r.system_profiler) : json(nullptr);
  // The kernel reports' writer: one shape of the block, throttle findings included.
  if (r.gpu_monitor) j["gpu_monitor"] = gpu::monitor_summary_json(*r.gpu_monitor);
  if (r.environment) j["environment"] = gpu::environment_json(*r.environment);
  if (r.quality_gate) j["quality_gate"] = *r.quality_gate;
  return j;
}

std::string summary_text(const BenchmarkReport& r) {
  std::string rule(60, '=');
  std::string fw = r.framework;
  std::transform(fw.begin(), fw.end(), fw.begin(), [](unsigned char c) { return std::toupper(c); });
  std::string out = rule + "\n";
  out += fmt::format("Benchmark Result: {}\n{}\n", fw, rule);
  out += fmt::format("Model: {}\n", r.model);
  std::string qualifier;
  if (r.status == RunStatus::kTimeout)
    qualifier = " (TIMEOUT, INCOMPLETE)";
  else if (r.status == RunStatus::kCancelled)
    qualifier = " (CANCELLED, INCOMPLETE)";
  else if (!r.complete)
    qualifier = " (INCOMPLETE)";
  out += fmt::format("Status: {}{}\n", r.success ? "SUCCESS" : "FAILED", qualifier);
  out += fmt::format("Run kind: {}\n", r.run_kind);
  if (const CaseReport* head = headline_case(r)) {
    const auto& m = head->metrics;
    out += head != &r.cases.front() ? fmt::format("\nThroughput (the knee's run, {}):\n", head->label)
                                    : "\nThroughput:\n";
    out += fmt::format("  Request throughput: {:.2f} req/s\n", m.request_throughput);
    out += fmt::format("  Output throughput: {:.2f} tok/s\n", m.output_throughput);
    out += fmt::format("  Total throughput: {:.2f} tok/s\n", m.total_token_throughput);
    out += fmt::format("  Completed requests: {}\n", m.completed);
    out += fmt::format("  Failed requests: {}\n", m.failed);
    out += fmt::format("  Duration: {:.2f}s\n", m.duration_s);
    out += "\nLatency:\n";
    for (auto [stats, name] :
         {std::pair{&m.ttft, "TTFT"}, {&m.tpot, "TPOT"}, {&m.itl, "ITL"}, {&m.e2el, "E2EL"}})
      out += fmt::format("  {} (mean/p99): {:.2f} ms / {:.2f} ms\n", name, stats->mean_ms,
                         percentile_or_zero(*stats, 99));
    out += fmt::format("  Send lateness vs schedule (p50/p99): {:.3f} ms / {:.3f} ms\n",
                       percentile_or_zero(m.send_lateness, 50), percentile_or_zero(m.send_lateness, 99));
    for (const auto& c : r.cases)
      if (c.slo && !r.slo_search) {
        std::string terms;
        for (const auto& ch : c.slo->checks)
          terms += fmt::format("{}{} {:.2f} ms {}", terms.empty() ? "" : ", ", ch.term.text, ch.value_ms,
                               ch.met ? "ok" : "MISSED");
        out += fmt::format("SLO {} {}: {} (goodput {:.2f} req/s)\n", c.label, c.slo->met ? "met" : "NOT met",
                           terms, c.metrics.request_goodput);
      }
    for (const auto& c : r.cases) {
      if (c.ramp.empty()) continue;
      out += fmt::format("\n{} ramp {}:\n  {:>13} {:>10} {:>8} {:>10} {:>14}{}\n",
                         c.ramp_concurrency ? "Concurrency" : "Rate", c.label, "window s",
                         c.ramp_concurrency ? "in flight" : "offered", "sent", "req/s", "TTFT p50/p99",
                         c.ramp.front().slo ? "  SLO" : "");
      for (const auto& w : c.ramp) {
        out += fmt::format("  {:>6.1f}-{:<6.1f} {:>10.2f} {:>8} {:>10.2f} {:>6.1f}/{:<7.1f}{}\n", w.from_s, w.to_s,
                           c.ramp_concurrency ? w.target_concurrency : w.offered_rate,
                           w.metrics.completed + w.metrics.failed, w.metrics.request_throughput,
                           w.metrics.ttft.median_ms, percentile_or_zero(w.metrics.ttft, 99),
                           w.slo ? (w.slo->met ? "  met" : "  NOT met") : "");
      }
    }
    if (const auto& ss = r.slo_search) {
      out += fmt::format("\nSLO search ({}, {}):\n", to_string(ss->settings.variable), knee_line(*ss));
      out += fmt::format("  {:>12} {:>9} {:>10} {:>10}  {}\n", ss->settings.variable == SearchVariable::kConcurrency
                                                                 ? "concurrency" : "rate req/s",
                         "verdict", "req/s", "goodput", "terms (median ms over runs)");
      for (const auto& p : ss->probes) {
        std::string terms;
        for (const auto& t : p.terms)
          terms += fmt::format("{}{} {:.2f} ({})", terms.empty() ? "" : ", ", t.term.text, t.value_ms,
                               to_string(t.verdict));
        out += fmt::format("  {:>12g} {:>9} {:>10.2f} {:>10.2f}  {}\n", p.value, to_string(p.verdict),
                           p.request_throughput, p.request_goodput, terms);
      }
    }
    if (const auto& pc = r.cases.front().prefix_cache) {
      out += fmt::format("\nPrefix pool: {} prefixes of {} tokens on {} of {} requests (target reuse {:.2f})\n",
                         pc->plan.pool, pc->plan.prefix_len, pc->plan.reusing, pc->plan.requests,
                         pc->plan.target_reuse);
      out += fmt::format("  Prefix cache hit rate: expected {:.3f}, measured {}\n", pc->plan.expected_hit_rate,
                         pc->measured_hit_rate ? fmt::format("{:.3f}", *pc->measured_hit_rate) : "n/a (" + pc->note + ")");
    }
    if (const auto& rm = m.reasoning)
      out += fmt::format("\nReasoning: {} requests, {} reasoning tokens; first reasoning token mean {:.2f} ms, "
                         "first output token mean/p99 {:.2f} / {:.2f} ms\n",
                         rm->requests, rm->reasoning_tokens, rm->first_reasoning.mean_ms, rm->first_output.mean_ms,
                         percentile_or_zero(rm->first_output, 99));
    if (const auto& sd = head->spec_decode)
      out += fmt::format("Speculative decoding: acceptance rate {}, mean acceptance length {} ({:.0f} drafts)\n",
                         sd->acceptance_rate ? fmt::format("{:.3f}", *sd->acceptance_rate) : "n/a",
                         sd->mean_acceptance_length ? fmt::format("{:.2f}", *sd->mean_acceptance_length) : "n/a",
                         sd->drafts);
    if (!m.by_turn.empty()) {
      out += "\nTTFT by turn (sessions):\n";
      for (const auto& t : m.by_turn)
        out += fmt::format("  turn {}: {} requests, mean input {:.0f} tokens, TTFT mean/p99 {:.2f} / {:.2f} ms\n",
                           t.turn, t.completed, t.mean_input_tokens, t.ttft.mean_ms, percentile_or_zero(t.ttft, 99));
    }
  }
  if (r.cases.size() > 1) {
    out += "\nSweep:\n";
    for (const auto& c : r.cases)
      out += fmt::format(
          "  {}: {:.2f} req/s, {:.2f} tok/s, TTFT mean {:.2f} ms, TPOT mean {:.2f} ms{}\n", c.label,
          c.metrics.request_throughput, c.metrics.output_throughput, c.metrics.ttft.mean_ms,
          c.metrics.tpot.mean_ms, c.complete ? "" : " (incomplete)");
  }
  if (r.gpu_monitor) {
    const auto& g = *r.gpu_monitor;
    out += "\nGPU monitor:\n";
    if (!g.available) out += fmt::format("  unavailable: {}\n", g.reason);
    for (const auto& gpu : g.gpus) {
      auto range = [&](const char* field, const char* unit) -> std::string {
        auto it = gpu.fields.find(field);
        if (it == gpu.fields.end()) return fmt::format("{} n/a", field);
        return fmt::format("{} {:.0f}/{:.0f}/{:.0f}{}", field, it->second.min, it->second.mean,
                           it->second.max, unit);
      };
      out += fmt::format("  GPU {} (min/mean/max): {}, {}, {}, {}, {}\n", gpu.index,
                         range("utilization_pct", "%"), range("memory_used_mib", " MiB"),
                         range("power_w", " W"), range("sm_clock_mhz", " MHz"),
                         range("temperature_c", " C"));
    }
    if (g.available) out += throttle_text(g.throttle);
  }
  if (r.system_profiler) {
    const auto& sp = *r.system_profiler;
    out += fmt::format("\nSystem profiler ({}): {}\n", sp.tool, sp.capture.string());
    for (size_t i = 0; i < sp.kernels.size() && i < 5; ++i)
      out += fmt::format("  {:5.1f}%  {:10.3f} ms  {:6} calls  {}\n", sp.kernels[i].percent,
                         sp.kernels[i].total_ns / 1e6, sp.kernels[i].instances, sp.kernels[i].name);
  }
  if (r.quality_gate) {
    // Quality beside speed: each task's headline metric, or why there is none.
    const auto& g = *r.quality_gate;
    out += fmt::format("\nQuality gate (lm-eval): {}\n", g.value("status", std::string("?")));
    if (g.contains("tasks") && g["tasks"].is_object())
      for (const auto& [task, t] : g["tasks"].items())
        out += fmt::format("  {}: {} = {:.4f}\n", task, t.value("primary_metric", std::string()),
                           t.value("value", 0.0));
  }
  if (r.environment) out += environment_text(*r.environment);
  if (!r.top_bottlenecks.empty()) {
    out += "\nTop Bottleneck Kernels:\n";
    for (size_t i = 0; i < r.top_bottlenecks.size() && i < 5; ++i)
      out += fmt::format("  {}. {}\n", i + 1, r.top_bottlenecks[i]);
  }
  if (r.capture_stability) out += "\n" + analysis::format_capture_stability(*r.capture_stability);
  if (!r.errors.empty()) {
    out += "\nErrors:\n";
    for (const auto& e : r.errors) out += fmt::format("  - {}\n", e);
  }
  out += fmt::format("\nWorkspace: {}\n", r.workspace_dir.string());
  out += fmt::format("Execution time: {:.2f}s\n", r.execution_time_s);
  out += rule + "\n";
  return out;
}

void write_report_files(const BenchmarkReport& report, const std::filesystem::path& workspace) {
  write_file_atomic(workspace / "benchmark_report.json", report_json(report).dump(2));
  write_file_atomic(workspace / "summary.txt", summary_text(report));
}

}  // namespace magpie::serve
