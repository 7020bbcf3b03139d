#include "store/workspace_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "core/file_io.hpp"
#include "store/run_environment.hpp"

namespace magpie::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct KindFiles {
  RunKind kind;
  const char* prefix;  // folder name prefix ("" = exact name below)
  const char* exact;
  const char* report;
};

constexpr KindFiles kKinds[] = {
    {RunKind::kAnalyze, "analyze_", "", "analyze_report.json"},
    {RunKind::kCompare, "compare_", "", "compare_report.json"},
    {RunKind::kBenchmark, "benchmark_", "", "benchmark_report.json"},
    {RunKind::kGapAnalysis, "gap_analysis_", "", "gap_analysis.json"},  // one folder per run
    {RunKind::kGapAnalysis, "", "gap_analysis", "gap_analysis.json"},   // an older Magpie's folder
    {RunKind::kTraceLens, "", "tracelens", "tracelens_manifest.json"},
};

const KindFiles& files_of(RunKind kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return k;
  return kKinds[0];
}

double num(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return NAN;
    at = &(*at)[key];
  }
  return at->is_number() ? at->get<double>() : NAN;
}

void put(std::map<std::string, double>& m, const std::string& name, double v) {
  if (std::isfinite(v)) m[name] = v;
}

std::string join_errors(const json& errors) {
  std::string out;
  if (!errors.is_array()) return out;
  for (const auto& e : errors) {
    if (!e.is_string() || e.get<std::string>().empty()) continue;
    if (!out.empty()) out += "; ";
    out += e.get<std::string>();
  }
  return out;
}

// Success of one kernel row of an analyze/compare summary.
bool kernel_ok(const json& row) {
  for (const char* key : {"compiling_state", "correctness_state", "performance_state"}) {
    auto s = row.value(key, std::string("SUCCESS"));
    if (s != "SUCCESS" && s != "SKIPPED") return false;
  }
  return true;
}

RunStatus kernel_status(const json& summary) {
  if (!summary.is_array() || summary.empty()) return RunStatus::kFailed;
  return std::all_of(summary.begin(), summary.end(), kernel_ok) ? RunStatus::kSucceeded
                                                                : RunStatus::kFailed;
}

std::string kernel_errors(const json& report) {
  std::string out;
  const json* results = nullptr;
  if (report.contains("results") && report["results"].is_array()) results = &report["results"];
  if (report.contains("results") && report["results"].is_object() &&
      report["results"].contains("kernel_results"))
    results = &report["results"]["kernel_results"];
  if (!results) return out;
  for (const auto& r : *results) {
    auto e = join_errors(r.value("errors", json::array()));
    if (e.empty()) continue;
    std::string id = r.contains("extra") ? r["extra"].value("kernel_id", "") : "";
    if (!out.empty()) out += "; ";
    out += id.empty() ? e : id + ": " + e;
  }
  return out;
}

}  // namespace

std::optional<RunKind> workspace_kind(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  const std::string name = dir.filename().string();
  for (const auto& k : kKinds) {
    bool name_ok = *k.prefix ? name.starts_with(k.prefix) : name == k.exact;
    if (name_ok && fs::is_regular_file(dir / k.report, ec)) return k.kind;
  }
  return std::nullopt;
}

std::vector<fs::path> find_workspaces(const fs::path& dir) {
  std::vector<fs::path> out;
  if (workspace_kind(dir)) return {dir};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    // A link (gap_analysis -> gap_analysis_<time>) names a folder listed on its own.
    if (entry.is_symlink(ec)) continue;
    if (workspace_kind(entry.path())) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, double> metrics_from_report(RunKind kind, const json& r) {
  std::map<std::string, double> m;
  switch (kind) {
    case RunKind::kBenchmark: {
      for (const char* key : {"request_throughput", "output_throughput", "total_token_throughput",
                              "completed_requests", "failed_requests", "duration_seconds"})
        put(m, key, num(r, {"throughput", key}));
      for (const char* metric : {"ttft", "tpot", "itl", "e2el"})
        for (const char* stat : {"mean_ms", "median_ms", "p99_ms"})
          put(m, fmt::format("{}.{}", metric, stat), num(r, {"latency", metric, stat}));
      put(m, "execution_time_s", num(r, {"execution_time"}));
      break;
    }
    case RunKind::kAnalyze:
    case RunKind::kCompare: {
      const json& summary = r.contains("summary") ? r["summary"] : json::array();
      bool all_correct = summary.is_array() && !summary.empty();
      for (const auto& row : summary) {
        all_correct = all_correct && row.value("correctness_state", "") == "SUCCESS";
        std::string id = row.value("kernel_id", "");
        if (id.empty()) continue;
        put(m, id + ".median_ns", num(row, {"performance_summary", "median_us"}) * 1e3);
        put(m, id + ".score", num(row, {"score"}));
      }
      m["all_correct"] = all_correct ? 1 : 0;
      if (kind == RunKind::kCompare && r.contains("results") && r["results"].is_object()) {
        const auto& res = r["results"];
        for (const auto& v : res.value("verdicts", json::array())) {
          std::string id = v.value("kernel_id", "");
          if (!id.empty()) put(m, id + ".speedup", num(v, {"speedup"}));
        }
        put(m, "winner_index", num(res, {"winner"}));
      }
      break;
    }
    case RunKind::kGapAnalysis:
      put(m, "total_duration_us", num(r, {"total_duration_us"}));
      put(m, "num_ranks", num(r, {"num_ranks"}));
      if (r.contains("skipped") && r["skipped"].is_array())
        m["skipped_files"] = static_cast<double>(r["skipped"].size());
      if (r.contains("top_kernels") && r["top_kernels"].is_array())
        m["top_kernels"] = static_cast<double>(r["top_kernels"].size());
      break;
    case RunKind::kTraceLens:
      if (r.contains("stage_results") && r["stage_results"].is_object()) {
        m["stages"] = static_cast<double>(r["stage_results"].size());
        for (const auto& [stage, sr] : r["stage_results"].items())
          put(m, stage + "_kernel_time_us", num(sr, {"summary", "kernel_time_us"}));
      }
      if (r.contains("errors") && r["errors"].is_array())
        m["errors"] = static_cast<double>(r["errors"].size());
      put(m, "seconds", num(r, {"timing_s", "total"}));
      if (r.contains("output_files") && r["output_files"].is_array())
        m["output_files"] = static_cast<double>(r["output_files"].size());
      break;
  }
  return m;
}

std::optional<RunRecord> read_workspace(const fs::path& dir) {
  auto kind = workspace_kind(dir);
  if (!kind) return std::nullopt;
  const fs::path report_path = dir / files_of(*kind).report;
  json report;
  try {
    auto buf = read_file(report_path);
    report = json::parse(buf.view());
  } catch (const std::exception&) {
    return std::nullopt;  // half-written or foreign: not a run we can describe
  }
  RunRecord r;
  r.kind = *kind;
  r.face = "import";
  r.workspace = normalize_workspace(dir);
  r.metrics = metrics_from_report(*kind, report);
  std::error_code ec;
  auto mtime = fs::last_write_time(report_path, ec);
  r.finished_at = ec ? iso_utc_now() : iso_utc(mtime);
  r.started_at = r.finished_at;
  switch (*kind) {
    case RunKind::kBenchmark: {
      bool success = report.value("success", false), complete = report.value("complete", true);
      r.status = success    ? RunStatus::kSucceeded
                 : complete ? RunStatus::kFailed
                            : RunStatus::kIncomplete;
      r.error = join_errors(report.value("errors", json::array()));
      double exec = num(report, {"execution_time"});
      if (auto end = parse_iso_utc(r.finished_at); end && std::isfinite(exec) && exec > 0) {
        auto t = static_cast<std::time_t>(*end - exec);
        r.started_at =
            iso_utc(fs::file_time_type::clock::from_sys(std::chrono::system_clock::from_time_t(t)));
      }
      if (fs::is_regular_file(dir / "config.yaml", ec)) {
        try {
          r.config_hash = hash_config(read_file(dir / "config.yaml").view());
        } catch (const std::exception&) {
        }
      }
      break;
    }
    case RunKind::kAnalyze:
    case RunKind::kCompare:
      r.status = kernel_status(report.value("summary", json::array()));
      r.error = kernel_errors(report);
      break;
    case RunKind::kGapAnalysis:
    case RunKind::kTraceLens: {
      // As src/jobs records them: a gap analysis with skipped files (its "errors") still
      // succeeded if it read a rank; TraceLens fails on any error.
      r.error = join_errors(report.value("errors", json::array()));
      bool produced =
          *kind == RunKind::kGapAnalysis
              ? r.metrics.count("num_ranks") && r.metrics["num_ranks"] > 0
              : r.error.empty() && r.metrics.count("output_files") && r.metrics["output_files"] > 1;
      r.status = produced ? RunStatus::kSucceeded : RunStatus::kFailed;
      break;
    }
  }
  return r;
}

}  // namespace magpie::store
