#include "store/series.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <regex>

#include "core/error.hpp"
#include "core/statistics.hpp"
#include "store/run_environment.hpp"

namespace magpie::store {

namespace {

std::string meta(const RunRecord& r, const char* key) {
  auto it = r.metadata.find(key);
  return it == r.metadata.end() ? std::string() : it->second;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// 97.5th percentile of Student's t, for a 95% interval of a mean.
double t975(size_t df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                      2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                      2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return NAN;
  if (df <= std::size(kTable)) return kTable[df - 1];
  return 1.96 + 2.5 / static_cast<double>(df);  // within 0.002 of the exact value past 30
}

// Succeeded runs, oldest first, grouped by series id.
struct Grouped {
  std::map<std::string, std::vector<RunRecord>> runs;
  std::map<std::string, SeriesKey> keys;
};

// `with_metrics` false: the runs' metrics are left to read_metrics (one series' history
// needs only its own runs' metrics).
Grouped group_runs(const ResultsStore& store, bool with_metrics = true) {
  auto all = store.list({.status = RunStatus::kSucceeded,
                         .limit = 0,
                         .check_workspaces = false,
                         .with_metrics = with_metrics});
  // Sorted by index, not by moving records (each a dozen strings and two maps) around.
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return all[a].started_at != all[b].started_at ? all[a].started_at < all[b].started_at
                                                  : all[a].id < all[b].id;
  });
  Grouped g;
  for (size_t i : order) {
    auto& r = all[i];
    auto key = series_key(r);
    auto id = series_id(key);
    g.keys.emplace(id, key);
    g.runs[id].push_back(std::move(r));
  }
  return g;
}

SeriesSummary summarize(const std::string& id, const SeriesKey& key,
                        const std::vector<RunRecord>& runs) {
  SeriesSummary s{id, key, series_label(key), runs.size(), 0, {}, {}, {}};
  if (runs.empty()) return s;
  s.first_at = runs.front().started_at;
  s.last_at = runs.back().started_at;
  std::vector<std::string> commits;
  for (const auto& r : runs) {
    if (commits.empty() || r.git_commit.empty() || commits.back() != r.git_commit)
      commits.push_back(r.git_commit);
    for (const auto& [name, v] : r.metrics) s.metrics.push_back(name);
  }
  s.commits = commits.size();
  std::sort(s.metrics.begin(), s.metrics.end());
  s.metrics.erase(std::unique(s.metrics.begin(), s.metrics.end()), s.metrics.end());
  return s;
}

std::vector<SeriesPoint> points_of(const std::vector<RunRecord>& runs, const std::string& metric) {
  std::vector<SeriesPoint> points;
  std::vector<std::vector<double>> values;
  for (const auto& r : runs) {
    auto it = r.metrics.find(metric);
    if (it == r.metrics.end() || !std::isfinite(it->second)) continue;
    if (points.empty() || r.git_commit.empty() || points.back().commit != r.git_commit) {
      points.push_back({r.git_commit, r.started_at, 0, {}, {}, {}, {}});
      values.emplace_back();
    }
    points.back().run_ids.push_back(r.id);
    points.back().workspaces.push_back(r.workspace);
    values.back().push_back(it->second);
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& v = values[i];
    points[i].value = stats::mean(v);
    if (v.size() >= 2) {
      const double half = t975(v.size() - 1) * stats::stddev(v) / std::sqrt(double(v.size()));
      points[i].ci_low = points[i].value - half;
      points[i].ci_high = points[i].value + half;
    }
  }
  return points;
}

// Pooled relative spread of the runs of one commit (each run against its point's mean).
NoiseEstimate repeat_noise(const std::vector<RunRecord>& runs, const std::string& metric,
                           const std::vector<SeriesPoint>& points) {
  std::map<int64_t, double> value;
  for (const auto& r : runs)
    if (auto it = r.metrics.find(metric); it != r.metrics.end()) value[r.id] = it->second;
  double ss = 0;
  size_t dof = 0, n = 0;
  std::vector<double> per_point;
  for (const auto& p : points) per_point.push_back(static_cast<double>(p.run_ids.size()));
  std::sort(per_point.begin(), per_point.end());
  for (const auto& p : points) {
    if (p.run_ids.size() < 2 || !(p.value != 0)) continue;
    for (auto id : p.run_ids) {
      const double rel = value[id] / p.value - 1;
      ss += rel * rel;
    }
    dof += p.run_ids.size() - 1;
    n += p.run_ids.size();
  }
  if (dof == 0) return {};
  const double cv = std::sqrt(ss / static_cast<double>(dof));
  return {cv, "repeats", n, cv / std::sqrt(std::max(1.0, stats::median_sorted(per_point)))};
}

double level_noise(std::span<const double> values,
                   const std::vector<stats::ChangePoint>& change_points) {
  std::vector<size_t> bounds{0};
  for (const auto& c : change_points) bounds.push_back(c.index);
  bounds.push_back(values.size());
  double ss = 0;
  size_t n = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    std::vector<double> level(values.begin() + static_cast<std::ptrdiff_t>(bounds[k]),
                              values.begin() + static_cast<std::ptrdiff_t>(bounds[k + 1]));
    if (level.size() < 3) continue;
    std::sort(level.begin(), level.end());
    const double med = stats::median_sorted(level);
    if (!(med != 0)) continue;
    std::vector<double> dev;
    for (double v : level) dev.push_back(std::fabs(v - med));
    std::sort(dev.begin(), dev.end());
    const double cv = 1.4826 * stats::median_sorted(dev) / std::fabs(med);
    ss += cv * cv * static_cast<double>(level.size());
    n += level.size();
  }
  return n == 0 ? 0 : std::sqrt(ss / static_cast<double>(n));
}

std::vector<SeriesChange> gate_changes(std::span<const double> values,
                                       const std::vector<stats::ChangePoint>& change_points,
                                       bool higher_better, double noise_cv,
                                       const ChangeSettings& settings) {
  std::vector<SeriesChange> out;
  const double gate = std::max(settings.min_change, noise_cv);
  for (size_t k = 0; k < change_points.size(); ++k) {
    const size_t from = k == 0 ? 0 : change_points[k - 1].index;
    const size_t at = change_points[k].index;
    const size_t to = k + 1 < change_points.size() ? change_points[k + 1].index : values.size();
    const double before = stats::mean(values.subspan(from, at - from));
    const double after = stats::mean(values.subspan(at, to - at));
    if (!(before != 0)) continue;
    const double rel = after / before - 1;
    if (std::fabs(rel) < gate) continue;
    const bool worse = higher_better ? rel < 0 : rel > 0;
    out.push_back({at, before, after, rel, change_points[k].p_value,
                   worse ? ChangeKind::kRegression : ChangeKind::kImprovement});
  }
  return out;
}

// A benchmark recorded before runs carried their workload: its command line
// stands in for it, without what changes between runs of one workload (the
// binary's path, the output folder, the endpoint's port).
std::string workload_from_command(const std::string& command_line) {
  std::vector<std::string> words;
  for (size_t a = 0, b; a < command_line.size(); a = b + 1) {
    b = command_line.find(' ', a);
    if (b == std::string::npos) b = command_line.size();
    if (b > a) words.push_back(command_line.substr(a, b - a));
  }
  std::string kept;
  for (size_t i = 1; i < words.size(); ++i) {
    const auto& w = words[i];
    if (w == "-o" || w == "--output-dir" || w == "--endpoint") {
      ++i;  // and its value
      continue;
    }
    if (w.rfind("--output-dir=", 0) == 0 || w.rfind("--endpoint=", 0) == 0) continue;
    kept += (kept.empty() ? "" : " ") + w;
  }
  return kept.empty() ? "" : "command " + hash_config(kept).substr(0, 8);
}

}  // namespace

SeriesKey series_key(const RunRecord& r) {
  SeriesKey k;
  k.kind = r.kind;
  k.config_hash = r.config_hash;
  k.gpu_model = r.gpu;
  if (auto at = k.gpu_model.find(" (GPU "); at != std::string::npos) k.gpu_model.resize(at);
  k.engine = meta(r, "engine");
  k.engine_version = meta(r, "engine_version");
  k.model = meta(r, "model");
  k.model_revision = meta(r, "model_revision");
  k.image = meta(r, "image");
  k.workload = meta(r, "workload");
  if (k.workload.empty() && r.kind == RunKind::kBenchmark)
    k.workload = workload_from_command(r.command_line);
  k.host_class = meta(r, "host_class");
  if (k.host_class.empty()) k.host_class = r.host;
  return k;
}

std::string series_id(const SeriesKey& k) {
  const std::string text = fmt::format(
      "{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", to_string(k.kind), k.config_hash,
      k.gpu_model, k.engine, k.engine_version, k.model, k.model_revision, k.image, k.workload,
      k.host_class);
  return hash_config(text).substr(0, 10);
}

std::string series_label(const SeriesKey& k) {
  std::string out(to_string(k.kind));
  auto add = [&](const std::string& part, const char* sep = " ") {
    if (!part.empty()) out += sep + part;
  };
  add(k.engine);
  add(k.engine_version, " ");
  add(k.model);
  add(k.model_revision, "@");
  add(k.workload);
  if (k.engine.empty() && k.model.empty() && k.workload.empty()) add("config " + k.config_hash);
  add(k.gpu_model, " on ");
  add(k.host_class, " @ ");
  return out;
}

std::vector<SeriesSummary> list_series(const ResultsStore& store) {
  auto g = group_runs(store);
  std::vector<SeriesSummary> out;
  for (const auto& [id, runs] : g.runs) out.push_back(summarize(id, g.keys[id], runs));
  std::sort(out.begin(), out.end(), [](const SeriesSummary& a, const SeriesSummary& b) {
    return a.last_at != b.last_at ? a.last_at > b.last_at : a.id < b.id;
  });
  return out;
}

bool higher_is_better(std::string_view m) {
  for (const char* up : {"throughput", "speedup", "score", "goodput", "bandwidth", "tflops"})
    if (m.find(up) != std::string_view::npos) return true;
  return false;
}

std::vector<std::string> default_metrics(RunKind kind, const std::vector<std::string>& present) {
  std::vector<std::string> out;
  auto has = [&](const std::string& m) {
    return std::find(present.begin(), present.end(), m) != present.end();
  };
  auto take_suffix = [&](std::string_view tail) {
    for (const auto& m : present)
      if (ends_with(m, tail)) out.push_back(m);
  };
  switch (kind) {
    case RunKind::kBenchmark:
      for (const char* m :
           {"request_throughput", "output_throughput", "ttft.median_ms", "tpot.median_ms"})
        if (has(m)) out.push_back(m);
      break;
    case RunKind::kAnalyze:
    case RunKind::kCompare:
      take_suffix(".median_ns");
      break;
    case RunKind::kGapAnalysis:
      if (has("total_duration_us")) out.push_back("total_duration_us");
      break;
    case RunKind::kTraceLens:
      take_suffix("_kernel_time_us");
      break;
  }
  return out;
}

const char* to_string(ChangeKind kind) {
  return kind == ChangeKind::kRegression ? "regression" : "improvement";
}

std::vector<SeriesChange> find_changes(std::span<const double> values, bool higher_better,
                                       double noise_cv, const ChangeSettings& settings) {
  auto cps = stats::e_divisive(values, settings.method);
  if (noise_cv < 0) noise_cv = level_noise(values, cps);
  return gate_changes(values, cps, higher_better, noise_cv, settings);
}

double series_noise(std::span<const double> values, const ChangeSettings& settings) {
  return level_noise(values, stats::e_divisive(values, settings.method));
}

SeriesSummary find_series(const ResultsStore& store, const std::string& id_or_prefix) {
  if (id_or_prefix.empty())
    throw Error(ErrorKind::kUsage, "no series named", store.path().string(), std::nullopt,
                "`magpie results series` lists the ids");
  std::vector<SeriesSummary> hits;
  for (auto& s : list_series(store))
    if (s.id.compare(0, id_or_prefix.size(), id_or_prefix) == 0) hits.push_back(std::move(s));
  if (hits.empty())
    throw Error(ErrorKind::kNotFound, fmt::format("no series {} in the results store", id_or_prefix),
                store.path().string(), std::nullopt, "`magpie results series` lists the ids");
  if (hits.size() > 1)
    throw Error(ErrorKind::kUsage,
                fmt::format("series prefix {} matches {} series ({}, {}, ...)", id_or_prefix,
                            hits.size(), hits[0].id, hits[1].id),
                store.path().string(), std::nullopt, "give more digits of the id");
  return hits.front();
}

namespace {

SeriesHistory history_of(const SeriesSummary& s, const std::vector<RunRecord>& runs,
                         const std::string& metric, const ChangeSettings& settings) {
  SeriesHistory h;
  h.series = s;
  h.metric = metric;
  h.higher_better = higher_is_better(metric);
  h.points = points_of(runs, metric);
  std::vector<double> values;
  for (const auto& p : h.points) values.push_back(p.value);
  auto cps = stats::e_divisive(values, settings.method);
  h.noise = repeat_noise(runs, metric, h.points);
  if (h.noise.basis.empty()) {
    const double cv = level_noise(values, cps);
    h.noise = {cv, "series", 0, cv};
  }
  h.changes = gate_changes(values, cps, h.higher_better, h.noise.point_cv, settings);
  return h;
}

}  // namespace

SeriesHistory series_history(const ResultsStore& store, const std::string& id_or_prefix,
                             const std::string& metric, const ChangeSettings& settings) {
  // Metrics only for the runs of the series asked for: most of a store is other series.
  auto g = group_runs(store, /*with_metrics=*/false);
  std::vector<std::string> hits;
  for (const auto& [id, runs] : g.runs)
    if (id.compare(0, id_or_prefix.size(), id_or_prefix) == 0) hits.push_back(id);
  const std::string id = hits.size() == 1 && !id_or_prefix.empty()
                             ? hits.front()
                             : find_series(store, id_or_prefix).id;
  store.read_metrics(g.runs[id]);
  const auto s = summarize(id, g.keys[id], g.runs[id]);
  std::string m = metric;
  if (m.empty()) {
    auto d = default_metrics(s.key.kind, s.metrics);
    m = d.empty() ? (s.metrics.empty() ? "" : s.metrics.front()) : d.front();
  }
  if (std::find(s.metrics.begin(), s.metrics.end(), m) == s.metrics.end())
    throw Error(ErrorKind::kNotFound,
                fmt::format("series {} has no metric '{}'", s.id, m.empty() ? "(none)" : m),
                store.path().string(), std::nullopt,
                fmt::format("its metrics: {}", fmt::join(s.metrics, ", ")));
  return history_of(s, g.runs[s.id], m, settings);
}

std::vector<SeriesOverview> series_overviews(const ResultsStore& store, const std::string& since,
                                             const ChangeSettings& settings) {
  auto g = group_runs(store);
  std::vector<SeriesOverview> out;
  for (const auto& [id, runs] : g.runs) {
    auto s = summarize(id, g.keys[id], runs);
    if (!since.empty() && s.last_at < since) continue;
    auto metrics = default_metrics(s.key.kind, s.metrics);
    if (metrics.empty() && !s.metrics.empty()) metrics.push_back(s.metrics.front());
    SeriesOverview o{s, {}};
    for (const auto& m : metrics) o.histories.push_back(history_of(s, runs, m, settings));
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const SeriesOverview& a, const SeriesOverview& b) {
    return a.series.last_at != b.series.last_at ? a.series.last_at > b.series.last_at
                                                : a.series.id < b.series.id;
  });
  return out;
}

std::string resolve_since(const std::string& since) {
  if (since.empty()) return {};
  static const std::regex days(R"((\d+)d)");
  static const std::regex iso(R"(\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?)");
  std::smatch m;
  if (std::regex_match(since, m, days)) {
    auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() -
                                                  std::chrono::hours(24 * std::stoll(m[1].str())));
    std::tm tm{};
    gmtime_r(&t, &tm);
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}", tm);
  }
  if (std::regex_match(since, iso)) {
    std::string s = since;
    if (!s.empty() && s.back() == 'Z') s.pop_back();  // compared as a prefix of started_at
    return s;
  }
  throw Error(ErrorKind::kUsage, fmt::format("--since '{}' is not a date", since), "",
              std::nullopt, "give 2026-12-01, 2026-12-01T08:00:00Z or 7d (days ago)");
}

bool CheckResult::regression() const {
  return std::any_of(changes.begin(), changes.end(),
                     [](const CheckedChange& c) { return c.change.kind == ChangeKind::kRegression; });
}

CheckResult check_series(const ResultsStore& store, const CheckSettings& settings) {
  CheckResult out;
  out.since = resolve_since(settings.since);
  auto g = group_runs(store);
  std::vector<SeriesSummary> chosen;
  if (settings.series.empty()) {
    for (const auto& [id, runs] : g.runs) chosen.push_back(summarize(id, g.keys[id], runs));
  } else {
    for (const auto& name : settings.series) chosen.push_back(find_series(store, name));
  }
  bool metric_seen = settings.metrics.empty();
  for (const auto& s : chosen) {
    auto metrics = settings.metrics.empty() ? default_metrics(s.key.kind, s.metrics)
                                            : settings.metrics;
    for (const auto& m : metrics) {
      if (std::find(s.metrics.begin(), s.metrics.end(), m) == s.metrics.end()) continue;
      metric_seen = true;
      auto h = history_of(s, g.runs[s.id], m, settings.change);
      CheckedSeries cs{s, m, h.points.size(), std::nullopt, h.noise, false};
      if (!h.points.empty()) cs.latest = h.points.back();
      for (const auto& c : h.changes) {
        const auto& p = h.points[c.index];
        if (!out.since.empty() && p.date < out.since) continue;
        cs.regressed = cs.regressed || c.kind == ChangeKind::kRegression;
        out.changes.push_back({s.id, s.label, m, h.higher_better, c, p, h.points[c.index - 1],
                               h.noise});
      }
      out.checked.push_back(std::move(cs));
    }
  }
  if (!metric_seen)
    throw Error(ErrorKind::kNotFound,
                fmt::format("no series has the metric{} {}", settings.metrics.size() > 1 ? "s" : "",
                            fmt::join(settings.metrics, ", ")),
                store.path().string(), std::nullopt,
                "`magpie results series` lists each series' metrics");
  std::stable_sort(out.changes.begin(), out.changes.end(),
                   [](const CheckedChange& a, const CheckedChange& b) {
                     return a.point.date < b.point.date;
                   });
  return out;
}

}  // namespace magpie::store
