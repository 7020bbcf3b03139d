#pragma once
// Performance over time: runs grouped into series of comparable runs, the
// points of a series along commits, and the changes along it that exceed the
// run-to-run noise (docs/RESULTS.md, "Series, history and change points").
//
// A series is every succeeded run with one series key: kind, config hash, GPU
// model (the "(GPU 2,3)" indices dropped), engine and its version, model and
// its revision, image, workload and host class. Engine, model, revision,
// image and workload come from the run's metadata (benchmarks record them);
// the host class is metadata `host_class` (from $MAGPIE_HOST_CLASS when the run
// was recorded), else the host name. Its id is a short hash of the key, the
// same on every machine.
//
// A point is one commit: consecutive runs (in start order) of one git commit
// are its repeats; its value is their mean, with a 95% t-interval when there
// are two or more. Runs without a commit are points of their own.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/change_points.hpp"
#include "store/results_store.hpp"

namespace magpie::store {

struct SeriesKey {
  RunKind kind = RunKind::kBenchmark;
  std::string config_hash, gpu_model, engine, engine_version, model, model_revision, image,
      workload, host_class;
};

SeriesKey series_key(const RunRecord& run);
// 10 hex digits of FNV-1a over the key's fields.
std::string series_id(const SeriesKey& key);
// "benchmark vllm tiny-llama CONC2_ISL32_OSL8 on NVIDIA H100 @ ci-h100": a name for people.
std::string series_label(const SeriesKey& key);

struct SeriesSummary {
  std::string id;
  SeriesKey key;
  std::string label;
  size_t runs = 0, commits = 0;
  std::string first_at, last_at;  // started_at of the oldest and newest run
  std::vector<std::string> metrics;  // every metric some run of the series has
};

// Every series of the store's succeeded runs, most recently run first.
std::vector<SeriesSummary> list_series(const ResultsStore& store);

// True for throughputs, speedups and scores; false for times and durations.
bool higher_is_better(std::string_view metric);
// The metrics `check` watches when none are named: throughputs and median
// latencies for benchmarks, kernel medians, total GPU time, stage kernel times.
std::vector<std::string> default_metrics(RunKind kind, const std::vector<std::string>& present);

struct SeriesPoint {
  std::string commit;  // "" when the runs were recorded outside a repository
  std::string date;    // started_at of the point's first run
  double value = 0;    // mean over its runs
  std::optional<double> ci_low, ci_high;  // 95% t-interval of the mean (two runs or more)
  std::vector<int64_t> run_ids;
  std::vector<std::string> workspaces;
};

struct NoiseEstimate {
  double cv = 0;           // run-to-run coefficient of variation (of one run)
  std::string basis;       // "repeats" (runs of one commit) or "series" (within its levels)
  size_t repeat_runs = 0;  // runs at commits with two runs or more
  // The noise of one point, the mean of its runs: cv / √(median runs per point) for
  // "repeats", cv itself for "series" (measured on points). What the gate compares with.
  double point_cv = 0;
};

enum class ChangeKind { kRegression, kImprovement };
const char* to_string(ChangeKind kind);  // "regression", "improvement"

struct SeriesChange {
  size_t index = 0;  // the first point of the new level
  double before = 0, after = 0;  // mean of the points of the level before and after
  double relative = 0;           // after / before − 1
  double p_value = 1;
  ChangeKind kind = ChangeKind::kRegression;
};

struct ChangeSettings {
  stats::ChangePointSettings method;
  // A change smaller than max(min_change, the noise of one point) is not confirmed.
  double min_change = 0.02;
};

// The confirmed changes of a series of point values: E-divisive's change
// points (core/change_points.hpp) whose step between the adjacent levels is
// at least max(min_change, noise_cv), the noise of one point. `noise_cv` < 0:
// measured from the series itself (series_noise).
std::vector<SeriesChange> find_changes(std::span<const double> values, bool higher_better,
                                       double noise_cv, const ChangeSettings& settings = {});
// The relative spread of points around their level's median (levels split
// at E-divisive's change points): 1.4826·MAD/median, pooled over levels.
double series_noise(std::span<const double> values, const ChangeSettings& settings = {});

struct SeriesHistory {
  SeriesSummary series;
  std::string metric;
  bool higher_better = true;
  std::vector<SeriesPoint> points;
  NoiseEstimate noise;
  std::vector<SeriesChange> changes;
};

// The id (or a unique prefix of it) → its series; throws Error(kNotFound) or
// Error(kUsage) (an ambiguous prefix) naming the fix.
SeriesSummary find_series(const ResultsStore& store, const std::string& id_or_prefix);
// The points of one metric along a series, with the noise and the confirmed
// changes. `metric` empty: the kind's first default metric. Throws
// Error(kNotFound) for a metric no run of the series has.
SeriesHistory series_history(const ResultsStore& store, const std::string& id_or_prefix,
                             const std::string& metric = {},
                             const ChangeSettings& settings = {});

// A series with the histories of its key metrics (default_metrics, else its
// first metric): what a site over the whole store shows.
struct SeriesOverview {
  SeriesSummary series;
  std::vector<SeriesHistory> histories;
};
// Every series, most recently run first, from one read of the store. With
// `since` (as resolve_since gives it), series with no run from then on are left
// out; the histories stay whole, so a change is judged against all of it.
std::vector<SeriesOverview> series_overviews(const ResultsStore& store,
                                             const std::string& since = {},
                                             const ChangeSettings& settings = {});

struct CheckSettings {
  std::string since;                // ISO date or time, or "7d"; "" = all
  std::vector<std::string> series;  // ids or prefixes; empty = all
  std::vector<std::string> metrics;  // empty = default_metrics of each series
  ChangeSettings change;
};

struct CheckedChange {
  std::string series_id, series_label, metric;
  bool higher_better = true;
  SeriesChange change;
  SeriesPoint point, previous;  // the first point of the new level and the one before it
  NoiseEstimate noise;
};

struct CheckedSeries {
  SeriesSummary series;
  std::string metric;
  size_t points = 0;
  std::optional<SeriesPoint> latest;
  NoiseEstimate noise;
  bool regressed = false;  // a regression since `since`
};

struct CheckResult {
  std::string since;  // as resolved (ISO); "" = all
  std::vector<CheckedSeries> checked;
  std::vector<CheckedChange> changes;  // since `since`, oldest first
  bool regression() const;
};

CheckResult check_series(const ResultsStore& store, const CheckSettings& settings);

// "2026-12-01", "2026-12-01T08:00:00Z" or "7d" (days before now) → ISO-8601
// UTC prefix comparable with started_at. Throws Error(kUsage).
std::string resolve_since(const std::string& since);

}  // namespace magpie::store
