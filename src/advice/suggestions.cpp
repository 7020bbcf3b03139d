#include "advice/suggestions.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "advice/readers.hpp"
#include "advice/rules.hpp"
#include "core/error.hpp"

namespace magpie::advice {

using nlohmann::json;

std::string_view to_string(BottleneckKind kind) {
  switch (kind) {
    case BottleneckKind::kMemoryBound:
      return "memory_bound";
    case BottleneckKind::kComputeBound:
      return "compute_bound";
    case BottleneckKind::kLaunchBound:
      return "launch_bound";
    case BottleneckKind::kExposedCommunication:
      return "exposed_communication";
    case BottleneckKind::kIdleGpu:
      return "idle_gpu";
    case BottleneckKind::kLowOccupancyOrLatency:
      return "low_occupancy_or_latency";
    case BottleneckKind::kCorrectnessFailure:
      return "correctness_failure";
    case BottleneckKind::kNoData:
      return "no_data";
  }
  return "no_data";
}

namespace {

// Roofline rows reported at most (the most severe); suggestions listed at most.
constexpr size_t kMaxRooflineBottlenecks = 10;
constexpr size_t kMaxSuggestions = 20;

// Ranks the bottlenecks, derives suggestions and the summary.
Advice finish(Advice a, std::optional<double> score, const std::vector<HotKernel>& hot = {}) {
  std::stable_sort(
      a.bottlenecks.begin(), a.bottlenecks.end(),
      [](const Bottleneck& x, const Bottleneck& y) { return x.severity > y.severity; });
  int priority = 0;
  for (const auto& b : a.bottlenecks) {
    auto s = suggestions_for(b, ++priority);
    a.suggestions.insert(a.suggestions.end(), s.begin(), s.end());
  }
  for (const auto& k : hot) {
    if (auto s = hot_kernel_hint(k, priority + 1)) a.suggestions.push_back(std::move(*s));
  }
  if (a.suggestions.size() > kMaxSuggestions) a.suggestions.resize(kMaxSuggestions);
  const double top = a.bottlenecks.empty() ? 0 : a.bottlenecks.front().severity;
  a.overall_score = score ? *score : std::clamp(1 - top, 0.0, 1.0);
  const std::string who = a.kernel_id.empty() ? a.source_kind : a.kernel_id;
  if (a.bottlenecks.empty()) {
    a.summary = fmt::format("{}: no bottleneck above the rules' thresholds", who);
  } else {
    const auto& b = a.bottlenecks.front();
    a.summary = fmt::format("{}: {} finding(s); first: {} in {} — {}", who, a.bottlenecks.size(),
                            to_string(b.kind), b.subject, b.evidence);
  }
  return a;
}

Advice from_analyze(const json& state) {
  const AnalyzeInput in = read_analyze_result(state);
  Advice a;
  a.source_kind = "analyze_result";
  a.kernel_id = in.kernel_id;
  // An incorrect kernel's timing means nothing: report only the failure.
  if (auto c = correctness_bottleneck(in.correctness)) {
    a.bottlenecks.push_back(std::move(*c));
    return finish(std::move(a), in.score);
  }
  if (in.performance_state != "SUCCESS") {
    std::string evidence = fmt::format(
        "performance_state {}", in.performance_state.empty() ? "missing" : in.performance_state);
    if (!in.performance_errors.empty()) evidence += ": " + in.performance_errors.front();
    a.bottlenecks.push_back(
        {BottleneckKind::kNoData, in.roofline.subject, 0, std::move(evidence), {}});
    return finish(std::move(a), in.score);
  }
  std::optional<Bottleneck> no_data;
  if (auto b = roofline_bottleneck(in.roofline, &no_data)) a.bottlenecks.push_back(std::move(*b));
  if (no_data) a.bottlenecks.push_back(std::move(*no_data));
  if (in.median_us) {
    LaunchObservation launch{in.roofline.subject, {{1.0, *in.median_us}}, 0, 1};
    if (auto b = launch_bottleneck(launch)) a.bottlenecks.push_back(std::move(*b));
  }
  return finish(std::move(a), in.score);
}

// One bottleneck per kind over the ranks: the worst rank, with how many ranks crossed the
// threshold.
void add_worst_per_kind(std::vector<Bottleneck> found, std::vector<Bottleneck>& out) {
  std::map<BottleneckKind, std::pair<Bottleneck, int>> worst;
  for (auto& b : found) {
    auto it = worst.find(b.kind);
    if (it == worst.end()) {
      worst.emplace(b.kind, std::pair{b, 1});
    } else {
      ++it->second.second;
      if (b.severity > it->second.first.severity) it->second.first = b;
    }
  }
  for (auto& [kind, entry] : worst) {
    entry.first.figures["ranks_over_threshold"] = entry.second;
    out.push_back(std::move(entry.first));
  }
}

void put_critical_path_first(const json& ranks, Advice& a);

Advice from_gap(const json& block) {
  const GapInput in = read_gap_report(block);
  Advice a;
  a.source_kind = "gap_report";
  std::vector<Bottleneck> per_rank;
  for (const auto& t : in.timelines) {
    for (auto& b : timeline_bottlenecks(t)) per_rank.push_back(std::move(b));
  }
  add_worst_per_kind(std::move(per_rank), a.bottlenecks);
  if (auto b = launch_bottleneck(in.launches)) a.bottlenecks.push_back(std::move(*b));
  if (in.timelines.empty() && in.launches.rows.empty()) {
    a.bottlenecks.push_back({BottleneckKind::kNoData,
                             "gap report",
                             0,
                             "the report has neither per-rank timelines nor top kernels",
                             {}});
  }
  a = finish(std::move(a), std::nullopt, in.hot_kernels);
  put_critical_path_first(block.value("ranks", json()), a);
  return a;
}

// The rank whose critical path is longest carries the decision; its
// recommendations (ranked by predicted end-to-end gain) go first.
void put_critical_path_first(const json& ranks, Advice& a) {
  if (!ranks.is_array()) return;
  const json* best = nullptr;
  double best_len = -1;
  for (const auto& r : ranks) {
    if (!r.is_object()) continue;
    const json* cp = r.contains("critical_path") && r["critical_path"].is_object() ? &r["critical_path"] : &r;
    if (!cp->contains("recommendations") || !(*cp)["recommendations"].is_array()) continue;
    const json& whole = cp->value("whole", json::object());
    const double len = whole.is_object() ? whole.value("length_us", 0.0) : cp->value("path_us", 0.0);
    if (len > best_len) best = cp, best_len = len;
  }
  if (!best) return;
  std::vector<Suggestion> first;
  int priority = 0;
  for (const auto& rec : (*best)["recommendations"]) {
    if (!rec.is_object()) continue;
    Suggestion sg;
    sg.kind = rec.value("kind", "");
    sg.applies_to = rec.value("target", "");
    sg.predicted_gain_us = rec.value("predicted_gain_us", 0.0);
    sg.predicted_gain_pct = rec.value("predicted_gain_pct", 0.0);
    sg.detail = rec.value("fix", "");
    sg.title = sg.kind == "kernel"
                   ? fmt::format("Kernel work on {} (kernel-time rank {}): at most {:.1f} us ({:.1f}%) end to end",
                                 sg.applies_to, rec.value("kernel_rank", 0), *sg.predicted_gain_us,
                                 *sg.predicted_gain_pct)
                   : fmt::format("{} fix: {:.1f} us ({:.1f}%) predicted end to end ({})",
                                 sg.kind == "launch" ? "Launch overhead" : sg.kind == "sync" ? "Sync" : "Host code",
                                 *sg.predicted_gain_us, *sg.predicted_gain_pct, sg.applies_to);
    sg.priority = ++priority;
    first.push_back(std::move(sg));
  }
  if (first.empty()) return;
  for (auto& sg : a.suggestions) sg.priority += priority;
  a.suggestions.insert(a.suggestions.begin(), first.begin(), first.end());
  if (a.suggestions.size() > kMaxSuggestions) a.suggestions.resize(kMaxSuggestions);
  const std::string headline = best->value("headline", best->value("bound", ""));
  a.summary = a.summary.empty() ? fmt::format("critical path: {}", headline)
                                 : fmt::format("critical path: {}. {}", headline, a.summary);
}

// critical_path.json (magpie whatif, MCP whatif): the ranked fixes only.
Advice from_critical_path(const json& report) {
  Advice a;
  a.source_kind = "critical_path";
  a = finish(std::move(a), std::nullopt);
  a.summary.clear();
  put_critical_path_first(report["ranks"], a);
  if (a.suggestions.empty())
    a.bottlenecks.push_back({BottleneckKind::kNoData, "critical path", 0, "no change predicts a gain", {}});
  return a;
}

Advice from_rows(RooflineRowsInput in) {
  Advice a;
  a.source_kind = "tracelens_report";
  a.kernel_id = in.stage;
  std::vector<Bottleneck> roof;
  for (const auto& o : in.rows) {
    if (auto b = roofline_bottleneck(o)) roof.push_back(std::move(*b));
  }
  std::stable_sort(roof.begin(), roof.end(),
                   [](const auto& x, const auto& y) { return x.severity > y.severity; });
  if (roof.size() > kMaxRooflineBottlenecks) roof.resize(kMaxRooflineBottlenecks);
  a.bottlenecks = std::move(roof);
  if (in.rows.empty()) {
    a.bottlenecks.push_back(
        {BottleneckKind::kNoData,
         "all ops",
         0,
         fmt::format("none of the {} rows has a perf model (roofline_bound is empty); record the "
                     "trace with record_shapes=True",
                     in.rows_without_model),
         {{"rows_without_model", static_cast<double>(in.rows_without_model)}}});
  }
  if (auto b = launch_bottleneck(in.launches)) a.bottlenecks.push_back(std::move(*b));
  if (in.timeline) {
    for (auto& b : timeline_bottlenecks(*in.timeline)) a.bottlenecks.push_back(std::move(b));
  }
  return finish(std::move(a), std::nullopt);
}

bool has_any(const json& j, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return j.contains(k); });
}

}  // namespace

Advice suggest_optimizations(const json& input) {
  if (input.is_array()) return from_rows(read_roofline_rows(input));
  if (!input.is_object()) {
    throw Error(ErrorKind::kBadFormat,
                fmt::format("expected a JSON object or array, got {}", input.type_name()), {},
                std::nullopt,
                "pass one analyze result, TraceLens roofline rows, or a gap_analysis.json block");
  }
  const std::string mode =
      input.value("mode", json()).is_string() ? input["mode"].get<std::string>() : "";
  if (mode == "analyze" || mode == "compare" ||
      (input.contains("results") && input.contains("summary"))) {
    throw Error(
        ErrorKind::kBadFormat,
        fmt::format("this is a whole {}_report.json, not one result",
                    mode.empty() ? "analyze/compare" : mode),
        {}, std::nullopt,
        "pass one entry of its `results` list (analyze_report.json) or of `results.kernel_results` "
        "(compare_report.json)");
  }
  if (has_any(input, {"compiling_state", "correctness_state", "performance_state"}))
    return from_analyze(input);
  if (input.contains("ranks") && input["ranks"].is_array() && !input["ranks"].empty() &&
      input["ranks"][0].is_object() && input["ranks"][0].contains("gain_bounds") && !input.contains("top_kernels"))
    return from_critical_path(input);
  if (has_any(input, {"top_kernels", "ranks", "total_duration_us"})) return from_gap(input);
  if (input.contains("gap_analysis") && input["gap_analysis"].is_object())
    return from_gap(input["gap_analysis"]);
  if (input.contains("rows")) {
    const std::string arch =
        input.value("gpu_arch", json()).is_string() ? input["gpu_arch"].get<std::string>() : "";
    auto rows = read_roofline_rows(input["rows"], arch);
    if (input.value("stage", json()).is_string()) rows.stage = input["stage"].get<std::string>();
    return from_rows(std::move(rows));
  }
  throw Error(ErrorKind::kBadFormat, "not an input suggest_optimizations knows", {}, std::nullopt,
              "pass one EvaluationState (with "
              "compiling_state/correctness_state/performance_state), TraceLens "
              "roofline rows ([...] or {\"rows\": [...]}), or a gap_analysis.json block (with "
              "top_kernels/ranks)");
}

Advice suggest_from_roofline_csv(const std::filesystem::path& csv) {
  return from_rows(read_roofline_csv(csv));
}

json to_json(const Advice& a) {
  json bottlenecks = json::array(), suggestions = json::array();
  for (const auto& b : a.bottlenecks) {
    bottlenecks.push_back({{"kind", to_string(b.kind)},
                           {"subject", b.subject},
                           {"severity", b.severity},
                           {"evidence", b.evidence},
                           {"figures", b.figures}});
  }
  for (const auto& s : a.suggestions) {
    suggestions.push_back({{"title", s.title},
                           {"detail", s.detail},
                           {"applies_to", s.applies_to},
                           {"priority", s.priority}});
    if (!s.kind.empty()) suggestions.back()["kind"] = s.kind;
    if (s.predicted_gain_us) suggestions.back()["predicted_gain_us"] = *s.predicted_gain_us;
    if (s.predicted_gain_pct) suggestions.back()["predicted_gain_pct"] = *s.predicted_gain_pct;
  }
  return {{"kernel_id", a.kernel_id},   {"overall_score", a.overall_score},
          {"bottlenecks", bottlenecks}, {"suggestions", suggestions},
          {"summary", a.summary},       {"source_kind", a.source_kind}};
}

}  // namespace magpie::advice
