#include "gpu/gpu_run_json.hpp"

namespace magpie::gpu {

using json = nlohmann::json;

json gpu_selection_json(const GpuSelectionRecord& r) {
  const auto& q = r.requested;
  json requested{{"auto", q.auto_select},
                 {"min_free_memory_gb", q.min_free_memory_gb},
                 {"count", q.count ? json(*q.count) : json(nullptr)},
                 {"candidates", q.candidates},
                 {"wait_sec", q.wait_s}};
  if (!r.chosen) return {{"requested", requested}, {"applied", false}, {"reason", r.not_applied}};
  const auto& s = *r.chosen;
  json gpus = json::array();
  for (size_t i = 0; i < s.indices.size(); ++i)
    gpus.push_back(
        {{"index", s.indices[i]},
         {"name", i < s.names.size() ? s.names[i] : ""},
         {"uuid", i < s.uuids.size() && !s.uuids[i].empty() ? json(s.uuids[i]) : json(nullptr)}});
  return {{"requested", requested}, {"applied", true}, {"indices", s.indices},
          {"names", s.names},       {"gpus", gpus},    {"env", {{s.env_name, s.env_value}}},
          {"reason", s.reason}};
}

namespace {

// `throttle`: the window (measuring spans, or the whole run when none was
// marked), whether the driver reports clocks event reasons at all, per GPU the
// samples in the window, those throttled and by which reasons, and the warnings.
json throttle_json(const ThrottleWindow& w) {
  json gpus = json::array();
  for (const auto& g : w.gpus)
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"samples", g.samples},
                    {"throttled_samples", g.throttled},
                    {"reasons", g.reasons}});
  json spans = json::array();
  for (const auto& [from, to] : w.spans) spans.push_back({from, to});
  return {{"window", w.marked ? "measuring" : "whole run"},
          {"from_s", w.from_s},
          {"to_s", w.to_s},
          {"spans", spans},
          {"reasons_reported", w.reasons_reported},
          {"throttled", w.any()},
          {"gpus", gpus},
          {"warnings", throttle_warnings(w)}};
}

}  // namespace

json monitor_summary_json(const GpuMonitorSummary& s) {
  if (!s.available)
    return {{"enabled", true}, {"available", false}, {"reason", s.reason}, {"notes", s.notes}};
  json gpus = json::array();
  for (const auto& g : s.gpus) {
    json fields = json::object();
    for (const auto& [name, r] : g.fields)
      fields[name] = {{"min", r.min}, {"mean", r.mean}, {"max", r.max}, {"samples", r.count}};
    gpus.push_back(
        {{"index", g.index}, {"name", g.name}, {"samples", g.samples}, {"fields", fields}});
  }
  return {{"enabled", true},
          {"available", true},
          {"interval_sec", s.interval_s},
          {"samples", s.samples},
          {"csv_path", s.csv_path.string()},
          {"gpus", gpus},
          {"throttle", throttle_json(s.throttle)},
          {"notes", s.notes}};
}

}  // namespace magpie::gpu
