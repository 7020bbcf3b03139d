#include "kernel/report_json.hpp"

#include <algorithm>
#include <optional>

#include "core/statistics.hpp"
#include "gpu/gpu_run_json.hpp"
#include "kernel/verdict.hpp"

namespace magpie::kernel {

using nlohmann::json;

namespace {

json stage_result(const StageResult& s) {
  json j{{"success", s.state == StageState::kSuccess}, {"errors", s.errors}};
  if (!s.notes.empty()) j["notes"] = s.notes;
  if (!s.commands.empty()) j["commands"] = s.commands;
  if (!s.log.empty()) j["log"] = s.log.string();
  j["wall_seconds"] = s.wall_seconds;
  // Ours: the failure's reason in one line, and its fix when known.
  if (!s.cause.empty()) j["cause"] = s.cause;
  if (!s.fix.empty()) j["fix"] = s.fix;
  return j;
}

json sample_stats(std::vector<double> ns) {
  if (ns.empty()) return json::object();
  auto s = stats::summarize(ns);
  return {{"count", s.count}, {"median_ns", s.median}, {"mean_ns", s.mean}, {"stddev_ns", s.stddev},
          {"cv", s.mean > 0 ? s.stddev / s.mean : 0}, {"min_ns", s.min}, {"max_ns", s.max}, {"p90_ns", s.p90},
          {"p99_ns", s.p99}};
}

json ms_stats(std::vector<double> ns) {
  if (ns.empty()) return nullptr;
  auto s = stats::summarize(ns);
  return {{"median_ms", s.median / 1e6}, {"p50_ms", s.median / 1e6}, {"p99_ms", s.p99 / 1e6},
          {"min_ms", s.min / 1e6}, {"max_ms", s.max / 1e6}, {"std_ms", s.stddev / 1e6}, {"n", s.count}};
}

// `probe_overlap_ns`: this implementation's probe (per implementation) or the
// largest over all probes (compare's top level); null without a probe.
json cupti_json(const CuptiChoice& c, std::optional<int64_t> probe_overlap_ns) {
  return {{"kind", c.kind.empty() ? json(nullptr) : json(c.kind)},
          {"chosen_by", c.chosen_by},
          {"reason", c.reason},
          {"probe_cross_stream_overlap_ns", probe_overlap_ns ? json(*probe_overlap_ns) : json(nullptr)}};
}

json performance_result(const Evaluation& e) {
  json j = stage_result(e.performance);
  j["command"] = e.performance.commands.empty() ? "" : e.performance.commands.front();
  j["workload_dir"] = e.dir.string();
  json summary = e.ncu_summary.is_object() ? e.ncu_summary : json::object();
  auto samples = e.samples_ns();
  if (!samples.empty()) {
    auto st = sample_stats(samples);
    summary["median_time"] = {{"value", st["median_ns"].get<double>() / 1e3}, {"unit", "us"}};
    summary["time_cv"] = {{"value", st["cv"]}, {"unit", "ratio"}};
  }
  if (e.floor_ns > 0) summary["roofline_floor"] = {{"value", e.floor_ns / 1e3}, {"unit", "us"}};
  j["summary"] = summary;
  json kernels = json::array();
  for (const auto& a : profiler::aggregate_by_name(e.kernels)) {
    kernels.push_back({{"kernel_name", a.kernel_name},
                       {"dispatch_count", a.dispatch_count},
                       {"duration_ns", {{"avg", a.avg_ns}, {"min", a.min_ns}, {"max", a.max_ns}, {"total", a.total_ns}}}});
  }
  j["kernels"] = kernels;
  // Ours: the samples the verdicts use, and where they came from.
  json rounds = json::array();
  std::optional<int64_t> probe_overlap;
  for (const auto& r : e.rounds) {
    if (r.probe) probe_overlap = r.cross_stream_overlap_ns;
    rounds.push_back({{"round", r.round}, {"probe", r.probe}, {"source", r.source},
                      {"samples", r.samples_ns.size()}, {"median_ns", median_of(r.samples_ns)},
                      {"cupti_kind", r.cupti_kind.empty() ? json(nullptr) : json(r.cupti_kind)},
                      {"cupti_busy_ns", r.cupti_busy_ns}, {"cupti_kernels", r.cupti_kernels},
                      {"cross_stream_overlap_ns", r.cross_stream_overlap_ns}, {"timed_kernels", r.timed_kernels},
                      {"timed_blocks", r.timed_blocks}, {"wall_seconds", r.wall_seconds}});
  }
  j["magpie_stats"] = {{"timing_source", e.timing_source()}, {"samples", sample_stats(samples)},
                       {"cupti", cupti_json(e.cupti, probe_overlap)}, {"rounds", rounds}};
  return j;
}

json latency_result(const Evaluation& e) {
  if (!e.latency_report) return nullptr;
  const auto& l = *e.latency_report;
  json j{{"success", l.success}, {"method", l.mode}, {"errors", l.error.empty() ? json::array() : json::array({l.error})}};
  std::vector<double> ns;
  for (double ms : l.samples_ms) ns.push_back(ms * 1e6);
  bool kernel_mode = l.mode == "events" || l.mode == "cupti" || l.mode == "profile";
  j["primary_metric"] = kernel_mode ? "kernel_median_ms" : "wall_median_ms";
  j["primary_value_ms"] = l.median_ms;
  j[kernel_mode ? "kernel_stats" : "wall_stats"] = ms_stats(ns);
  j["payload"] = l.payload;
  if (l.payload.contains("crosscheck")) j["crosscheck"] = l.payload["crosscheck"];
  return j;
}

}  // namespace

json evaluation_state(const Evaluation& e) {
  json j;
  j["compiling_state"] = to_string(e.compiling.state);
  j["correctness_state"] = to_string(e.correctness.state);
  j["performance_state"] = to_string(e.performance.state);
  j["latency_state"] = to_string(e.latency.state);
  j["errors"] = e.errors;
  j["score"] = e.score();
  j["compiling_result"] = stage_result(e.compiling);
  j["correctness_result"] = stage_result(e.correctness);
  j["correctness_result"]["scope"] = e.correctness_scope;
  if (!e.correctness_detail.is_null()) j["correctness_result"]["details"] = e.correctness_detail;
  j["performance_result"] = performance_result(e);
  j["latency_result"] = latency_result(e);
  j["extra"] = {{"kernel_id", e.spec.id}, {"kernel_type", to_string(e.spec.type)}};
  return j;
}

namespace {
json summary_row(const Evaluation& e) {
  json s{{"kernel_id", e.spec.id},
         {"kernel_type", to_string(e.spec.type)},
         {"compiling_state", to_string(e.compiling.state)},
         {"correctness_state", to_string(e.correctness.state)},
         {"performance_state", to_string(e.performance.state)},
         {"latency_state", to_string(e.latency.state)},
         {"score", e.score()}};
  if (e.latency_report && e.latency_report->success) s["latency"] = {{"median_ms", e.latency_report->median_ms}};
  auto samples = e.samples_ns();
  if (!samples.empty()) {
    s["performance_summary"] = {{"median_us", median_of(samples) / 1e3}, {"samples", samples.size()},
                                {"timing_source", e.timing_source()}};
  }
  return s;
}
}  // namespace

namespace {
void add_environment(json& report, const ReportEnvironment* env) {
  if (env == nullptr) return;
  report["environment"] = gpu::environment_json(env->environment);
  const GpuInfo& g = env->gpu;
  report["gpu_peaks"] = {{"name", g.name.empty() ? json(nullptr) : json(g.name)},
                         {"arch", g.arch.empty() ? json(nullptr) : json(g.arch)},
                         {"memory_bandwidth_tbps", g.peak_tbps > 0 ? json(g.peak_tbps) : json(nullptr)},
                         {"bf16_tflops", g.peak_tflops > 0 ? json(g.peak_tflops) : json(nullptr)},
                         {"source", g.peaks_source}};
  if (env->gpu_selection) report["gpu_selection"] = gpu::gpu_selection_json(*env->gpu_selection);
  if (env->gpu_monitor) report["gpu_monitor"] = gpu::monitor_summary_json(*env->gpu_monitor);
}
}  // namespace

json analyze_report(const std::vector<Evaluation>& evals, const std::string& timestamp,
                    const ReportEnvironment* env) {
  json summary = json::array(), results = json::array();
  for (const auto& e : evals) {
    summary.push_back(summary_row(e));
    results.push_back(evaluation_state(e));
  }
  json report{{"mode", "analyze"}, {"timestamp", timestamp}, {"summary", summary}, {"results", results}};
  add_environment(report, env);
  return report;
}

json compare_report(const std::vector<Evaluation>& evals, const Ranking& ranking, const VerdictSettings& settings,
                    const CuptiChoice& cupti, const std::string& timestamp, const ReportEnvironment* env) {
  json kernel_results = json::array(), correctness = json::array(), perf_scores = json::array(),
       summary = json::array();
  bool all_correct = true;
  for (const auto& e : evals) {
    kernel_results.push_back(evaluation_state(e));
    correctness.push_back(e.correct());
    all_correct = all_correct && e.correct();
    summary.push_back(summary_row(e));
  }
  for (const auto& row : ranking.rows) {
    auto it = std::find_if(ranking.rankings.begin(), ranking.rankings.end(),
                           [&](const auto& p) { return p.first == row.index; });
    perf_scores.push_back(it == ranking.rankings.end() ? json(nullptr) : json(it->second));
  }
  json rankings = json::array();
  for (const auto& [idx, score] : ranking.rankings) rankings.push_back({idx, score});
  json verdicts = json::array();
  for (const auto& row : ranking.rows) {
    json v{{"index", row.index}, {"kernel_id", row.id}, {"eligible", row.eligible}, {"median_ns", row.median_ns},
           {"cv", row.cv}, {"samples", row.samples}, {"rank", row.rank ? json(*row.rank) : json(nullptr)}};
    if (!row.eligible) v["reason"] = row.reason;
    if (!row.eligible && !row.fix.empty()) v["fix"] = row.fix;
    if (row.index == ranking.baseline) v["role"] = "baseline";
    if (row.vs_baseline) {
      const auto& s = *row.vs_baseline;
      v["speedup"] = s.speedup;
      v["ci_low"] = s.ci_low;
      v["ci_high"] = s.ci_high;
      v["verdict"] = to_string(s.verdict);
      v["verdict_reason"] = s.reason;
    }
    verdicts.push_back(v);
  }
  json results{{"kernel_results", kernel_results},
               {"comparison_metrics", {{"correctness", correctness}, {"all_correct", all_correct},
                                       {"perf_scores", perf_scores}}},
               {"winner", ranking.winner ? json(*ranking.winner) : json(nullptr)},
               {"rankings", rankings},
               {"summary", ranking.summary},
               {"baseline_index", ranking.baseline},
               {"verdicts", verdicts},
               {"verdict_rule", {{"threshold", settings.threshold}, {"confidence", settings.confidence},
                                 {"bootstrap_resamples", settings.resamples}, {"seed", settings.seed},
                                 {"statistic", "median(baseline)/median(candidate)"},
                                 {"bootstrap", "two-level: rounds, then samples within rounds"}}},
               {"cupti", cupti_json(cupti, cupti.probe_overlap_ns)},
               {"regression", ranking.any_regression}};
  json report{{"mode", "compare"}, {"timestamp", timestamp}, {"summary", summary}, {"results", results}};
  add_environment(report, env);
  return report;
}

}  // namespace magpie::kernel
