// The results tools: runs recorded in the results store (src/store), read back
// and compared. Mapping only; the store does the work.
#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"
#include "store/compare_reports.hpp"
#include "store/report_diff_writers.hpp"
#include "store/results_store.hpp"
#include "store/run_record_json.hpp"
#include "store/series.hpp"
#include "store/series_writers.hpp"
#include "store/workspace_import.hpp"

namespace magpie::mcp::detail {

using nlohmann::json;
namespace fs = std::filesystem;
namespace s = schema;

namespace {

json run_schema() {
  return s::object(
      {{"id", s::integer("run id")},
       {"kind", s::one_of("", {"analyze", "compare", "benchmark", "gap_analysis", "tracelens"})},
       {"status", s::one_of("", {"running", "succeeded", "failed", "cancelled", "incomplete"})},
       {"workspace", s::string("")},
       {"workspace_exists", s::boolean("")},
       {"metrics", s::any_object("key metrics by name")},
       {"metadata", s::any_object("where it ran: ray_job_id, ray_cluster, ray_status for a Ray job")},
       {"started_at", s::string("ISO-8601 UTC")},
       {"finished_at", s::string("")},
       {"error", s::string("")}},
      {"id", "kind", "status", "workspace", "metrics"});
}

bool all_digits(const std::string& t) {
  return !t.empty() &&
         std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool under(const std::string& workspace, const std::string& dir) {
  return workspace == dir ||
         (workspace.size() > dir.size() && workspace.compare(0, dir.size(), dir) == 0 &&
          workspace[dir.size()] == '/');
}

// A run id or a workspace directory → the run (recorded, or read from disk).
store::RunRecord resolve_run(const std::string& target) {
  auto db = store::ResultsStore::open(store::ResultsStore::default_path());
  std::error_code ec;
  std::optional<store::RunRecord> r;
  if (all_digits(target) && !fs::is_directory(target, ec)) {
    r = db.get(std::stoll(target));
    if (!r)
      throw Error(ErrorKind::kNotFound, "no run " + target + " in the results store",
                  db.path().string(), std::nullopt,
                  "list_benchmark_results shows the ids and workspaces");
    return *r;
  }
  if (!fs::exists(target, ec))
    throw Error(ErrorKind::kNotFound, "no such workspace directory", target, std::nullopt,
                "pass a workspace path (or run id) from list_benchmark_results");
  r = db.find_by_workspace(target);
  if (!r) r = store::read_workspace(target);
  if (!r)
    throw Error(ErrorKind::kNotFound, "neither a recorded run nor a workspace with a report",
                target, std::nullopt,
                "pass a workspace path (or run id) from list_benchmark_results");
  return *r;
}

// The main report file of a workspace, by kind.
std::optional<fs::path> report_file(const store::RunRecord& r) {
  fs::path ws = r.workspace;
  for (const char* name : {"benchmark_report.json", "compare_report.json", "analyze_report.json",
                           "gap_analysis.json", "gap_analysis/gap_analysis.json",
                           "tracelens_manifest.json", "tracelens/tracelens_manifest.json"}) {
    std::error_code ec;
    if (fs::is_regular_file(ws / name, ec)) return ws / name;
  }
  return std::nullopt;
}

}  // namespace

Tool list_benchmark_results_tool() {
  Tool t;
  t.name = "list_benchmark_results";
  t.title = "List recorded runs";
  t.description =
      "Runs recorded in Magpie's results store (benchmark, analyze, compare, gap_analysis, "
      "tracelens), newest first, with status, workspace and key metrics. output_dir indexes the "
      "workspaces under that folder first (ones made before the store) and lists only those.";
  t.input_schema = s::input(
      {{"output_dir", s::path("Only runs whose workspace is under this folder (indexed first)")},
       {"limit", s::with_default(s::integer("At most this many runs (0 = all)", 0), 20)},
       {"kind", s::one_of("Only this kind",
                          {"analyze", "compare", "benchmark", "gap_analysis", "tracelens"})},
       {"status", s::one_of("Only this status",
                            {"running", "succeeded", "failed", "cancelled", "incomplete"})}});
  t.output_schema = s::object({{"store", s::string("the results store file")},
                               {"count", s::integer("")},
                               {"runs", s::array(run_schema(), "newest first")}},
                              {"store", "count", "runs"});
  t.handler = [](const ToolCall& call) {
    auto db = store::ResultsStore::open(store::ResultsStore::default_path());
    store::RunFilter filter;
    if (has_arg(call, "kind"))
      filter.kind = store::run_kind_from_string(arg<std::string>(call, "kind", ""));
    if (has_arg(call, "status"))
      filter.status = store::run_status_from_string(arg<std::string>(call, "status", ""));
    size_t limit = static_cast<size_t>(arg<int64_t>(call, "limit", 20));
    std::string dir;
    if (has_arg(call, "output_dir")) {
      fs::path d = arg<std::string>(call, "output_dir", "");
      std::error_code ec;
      if (!fs::is_directory(d, ec))
        throw Error(
            ErrorKind::kNotFound, "output_dir is not a directory", d.string(), std::nullopt,
            "pass the -o/--output-dir the runs wrote to, or leave output_dir out to list all runs");
      db.import_workspaces(d);
      dir = store::normalize_workspace(d);
      filter.limit = 0;
    } else {
      filter.limit = limit;
    }
    json runs = json::array();
    for (const auto& r : db.list(filter)) {
      if (!dir.empty() && !under(store::normalize_workspace(r.workspace), dir)) continue;
      if (limit && runs.size() >= limit) break;
      runs.push_back(store::to_json(r));
    }
    json out = {{"store", db.path().string()}, {"count", runs.size()}, {"runs", std::move(runs)}};
    return ToolOutput{out, {}};
  };
  return t;
}

Tool get_benchmark_result_tool() {
  Tool t;
  t.name = "get_benchmark_result";
  t.title = "One recorded run";
  t.description =
      "One run by workspace directory (or run id): status, key metrics, the kernel/op tables its "
      "workspace holds, and optionally its full report JSON and TraceLens files.";
  t.input_schema = s::input(
      {{"workspace_dir", s::path("A workspace directory, or a run id from list_benchmark_results")},
       {"include_kernel_summary",
        s::with_default(s::boolean("List the gap-analysis / TraceLens kernel tables"), true)},
       {"include_raw_result",
        s::with_default(s::boolean("Include the workspace's report JSON"), false)},
       {"include_tracelens_files",
        s::with_default(s::boolean("List the TraceLens report files"), false)}},
      {"workspace_dir"});
  t.output_schema = s::object(
      {{"run", run_schema()},
       {"report_file", s::string("the workspace's main report")},
       {"kernel_tables", s::array(s::object({{"section", s::string("")}, {"csv", s::string("")}},
                                            {"section", "csv"}),
                                  "op/kernel tables (gap analysis, TraceLens)")},
       {"top_kernels", s::array(s::any_object(""), "the gap analysis's top kernels, when present")},
       {"report", s::any_object("include_raw_result: the report JSON")},
       {"tracelens_files", s::array(s::string(""), "include_tracelens_files")}},
      {"run"});
  t.handler = [](const ToolCall& call) {
    store::RunRecord r = resolve_run(arg<std::string>(call, "workspace_dir", ""));
    json out = {{"run", store::to_json(r)}};
    auto report_path = report_file(r);
    std::optional<json> report;
    if (report_path) {
      out["report_file"] = report_path->string();
      report = json::parse(read_file(*report_path).view(), nullptr, false);
      if (report->is_discarded() || !report->is_object()) report.reset();
    }
    if (arg<bool>(call, "include_kernel_summary", true)) {
      json tables = json::array();
      for (const auto& src : store::find_op_tables(r.workspace))
        tables.push_back({{"section", src.section}, {"csv", src.csv.string()}});
      out["kernel_tables"] = std::move(tables);
      // A gap analysis report carries its top kernels itself; a profiled
      // benchmark's report carries its gap analysis block.
      if (report) {
        const json* block = &*report;
        if (report->contains("gap_analysis") && (*report)["gap_analysis"].is_object())
          block = &(*report)["gap_analysis"];
        if (block->contains("top_kernels") && (*block)["top_kernels"].is_array()) {
          json top = json::array();
          for (const auto& k : (*block)["top_kernels"])
            if (k.is_object() && top.size() < 20) top.push_back(k);
          out["top_kernels"] = std::move(top);
        }
      }
    }
    if (arg<bool>(call, "include_raw_result", false) && report) out["report"] = *report;
    if (arg<bool>(call, "include_tracelens_files", false)) {
      json files = json::array();
      std::error_code ec;
      for (fs::path dir : {fs::path(r.workspace) / "tracelens", fs::path(r.workspace)}) {
        if (!fs::is_directory(dir, ec) ||
            (dir == fs::path(r.workspace) && r.kind != store::RunKind::kTraceLens))
          continue;
        for (const auto& e : fs::recursive_directory_iterator(dir, ec))
          if (e.is_regular_file()) files.push_back(e.path().string());
        break;
      }
      std::sort(files.begin(), files.end());
      out["tracelens_files"] = std::move(files);
    }
    return ToolOutput{out, {}};
  };
  return t;
}

Tool compare_benchmark_reports_tool() {
  Tool t;
  t.name = "compare_benchmark_reports";
  t.title = "Compare runs";
  t.description =
      "Compares two or more workspaces against the first (the baseline). Serving benchmarks: "
      "throughput and TTFT/TPOT/ITL/E2EL with bootstrap CIs and FASTER/SLOWER/SAME/AMBIGUOUS "
      "verdicts, and, when both reports carry an accuracy gate (quality_gate), each task's answers "
      "paired by item (exact McNemar: BETTER/SAME/WORSE with a CI); kernel compares: per-kernel "
      "medians; gap analysis / TraceLens workspaces: their "
      "kernel tables side by side. Writes report_diff.{csv,json} and op_comparison.csv to "
      "output_dir.";
  t.input_schema = s::input(
      {{"workspace_dirs", s::array(s::path(""), "Workspaces (or run ids), baseline first", 2)},
       {"labels", s::array(s::string(""), "One label per workspace")},
       {"output_dir",
        s::with_default(s::path("Where the comparison files go"), "./results/comparison")},
       {"export_format",
        s::with_default(s::one_of("File format", {"csv", "json", "both"}), "csv")}},
      {"workspace_dirs"});
  t.output_schema = s::object(
      {{"output_dir", s::string("")},
       {"files", s::array(s::string(""), "written")},
       {"notes", s::array(s::string(""), "why a part was skipped")},
       {"diff", s::any_object("serving/kernel metric diff (verdicts per metric; quality: paired accuracy per task)")},
       {"ops", s::object({{"labels", s::array(s::string(""), "")},
                          {"sections", s::array(s::string(""), "")},
                          {"rows", s::array(s::any_object(""), "largest baseline time first")}},
                         {"labels", "rows"})}},
      {"output_dir", "files", "notes"});
  t.handler = [](const ToolCall& call) {
    store::CompareReportsRequest req;
    for (const auto& w : call.arguments["workspace_dirs"]) {
      std::string target = w.get<std::string>();
      std::error_code ec;
      req.workspace_dirs.push_back(all_digits(target) && !fs::is_directory(target, ec)
                                       ? fs::path(resolve_run(target).workspace)
                                       : fs::path(target));
    }
    req.labels = arg<std::vector<std::string>>(call, "labels", {});
    req.output_dir = arg<std::string>(call, "output_dir", "./results/comparison");
    req.export_format = arg<std::string>(call, "export_format", "csv");
    store::CompareReportsResult res = store::compare_benchmark_reports(req);
    json out = {
        {"output_dir", req.output_dir.string()}, {"files", json::array()}, {"notes", res.notes}};
    for (const auto& f : res.files) out["files"].push_back(f.string());
    std::string text;
    if (res.diff) {
      out["diff"] = store::diff_json(*res.diff);
      text = store::diff_table(*res.diff);
    }
    if (res.ops) {
      json rows = json::array();
      for (const auto& row : res.ops->rows) {
        json cells = json::array();
        for (const auto& c : row.cells)
          cells.push_back(
              c ? json{{"time_us", c->time_us}, {"calls", c->calls}, {"share_pct", c->share_pct}}
                : json(nullptr));
        rows.push_back({{"section", row.section}, {"name", row.name}, {"cells", std::move(cells)}});
        if (rows.size() >= 50) break;  // the CSV has them all
      }
      out["ops"] = {
          {"labels", res.ops->labels}, {"sections", res.ops->sections}, {"rows", std::move(rows)}};
    }
    if (!text.empty()) {
      text += "\nfiles:";
      for (const auto& f : res.files) text += "\n  " + f.string();
    }
    return ToolOutput{out, text};
  };
  return t;
}

namespace {

json series_schema() {
  return s::object({{"id", s::string("short stable id: pass it to get_series_history")},
                    {"label", s::string("kind, engine, model, workload, GPU model, host class")},
                    {"key", s::any_object("the fields that make runs comparable")},
                    {"runs", s::integer("succeeded runs")},
                    {"commits", s::integer("points: runs of one commit are one point")},
                    {"last_at", s::string("ISO-8601 UTC")},
                    {"metrics", s::array(s::string(""), "")}},
                   {"id", "label", "runs", "metrics"});
}

}  // namespace

Tool list_result_series_tool() {
  Tool t;
  t.name = "list_result_series";
  t.title = "Series of comparable runs";
  t.description =
      "The results store's succeeded runs grouped into series of comparable runs (same kind, "
      "config hash, GPU model, engine and version, model and revision, image, workload, host "
      "class), most recently run first, each with a short stable id for get_series_history and "
      "check_result_series.";
  t.input_schema = s::input(
      {{"kind", s::one_of("Only this kind",
                          {"analyze", "compare", "benchmark", "gap_analysis", "tracelens"})}});
  t.output_schema = s::object({{"store", s::string("the results store file")},
                               {"series", s::array(series_schema(), "most recent first")}},
                              {"store", "series"});
  t.handler = [](const ToolCall& call) {
    auto db = store::ResultsStore::open(store::ResultsStore::default_path());
    std::string kind = arg<std::string>(call, "kind", "");
    json series = json::array();
    std::vector<store::SeriesSummary> shown;
    for (auto& x : store::list_series(db)) {
      if (!kind.empty() && store::to_string(x.key.kind) != kind) continue;
      series.push_back(store::to_json(x));
      shown.push_back(std::move(x));
    }
    return ToolOutput{{{"store", db.path().string()}, {"series", std::move(series)}},
                      store::series_text(shown)};
  };
  return t;
}

Tool get_series_history_tool() {
  Tool t;
  t.name = "get_series_history";
  t.title = "One metric along a series";
  t.description =
      "The points of one metric along a series over time: one per commit (repeats averaged, "
      "with a 95% CI), the run-to-run noise, and the confirmed change points (E-divisive means "
      "with a permutation test, kept only beyond the noise).";
  t.input_schema = s::input(
      {{"series", s::path("Series id (or a unique prefix) from list_result_series")},
       {"metric", s::string("Metric name (default: the kind's headline metric)")},
       {"min_change", s::with_default(s::number("Smallest relative step confirmed", 0), 0.02)}},
      {"series"});
  t.output_schema = s::object({{"series", series_schema()},
                               {"metric", s::string("")},
                               {"higher_is_better", s::boolean("")},
                               {"noise", s::any_object("run-to-run CV and its basis")},
                               {"points", s::array(s::any_object(""), "oldest first")},
                               {"changes", s::array(s::any_object(""), "confirmed change points")}},
                              {"series", "metric", "points", "changes"});
  t.handler = [](const ToolCall& call) {
    auto db = store::ResultsStore::open(store::ResultsStore::default_path());
    store::ChangeSettings settings;
    settings.min_change = arg<double>(call, "min_change", 0.02);
    auto h = store::series_history(db, arg<std::string>(call, "series", ""),
                                   arg<std::string>(call, "metric", ""), settings);
    return ToolOutput{store::to_json(h), store::history_text(h)};
  };
  return t;
}

Tool check_result_series_tool() {
  Tool t;
  t.name = "check_result_series";
  t.title = "Regressions along series";
  t.description =
      "Change points along every series (or the ones named) since a date: confirmed regressions "
      "and improvements, each with the commit where the level changed, the level before and "
      "after, p-value and the run-to-run noise it exceeded. regression is true when any "
      "regression was found (the CLI's `magpie results check` exits 9 then).";
  t.input_schema = s::input(
      {{"since", s::string("Only changes from this date on: 2026-12-01, ISO time, or 7d")},
       {"series", s::array(s::string(""), "Series ids or prefixes (default: all)")},
       {"metrics", s::array(s::string(""), "Metrics (default: each kind's headline metrics)")},
       {"min_change", s::with_default(s::number("Smallest relative step confirmed", 0), 0.02)}});
  t.output_schema = s::object({{"since", s::string("as resolved; empty = all")},
                               {"regression", s::boolean("a regression was found")},
                               {"checked", s::array(s::any_object(""), "series and metric pairs")},
                               {"changes", s::array(s::any_object(""), "oldest first")}},
                              {"regression", "checked", "changes"});
  t.handler = [](const ToolCall& call) {
    auto db = store::ResultsStore::open(store::ResultsStore::default_path());
    store::CheckSettings settings;
    settings.since = arg<std::string>(call, "since", "");
    settings.series = arg<std::vector<std::string>>(call, "series", {});
    settings.metrics = arg<std::vector<std::string>>(call, "metrics", {});
    settings.change.min_change = arg<double>(call, "min_change", 0.02);
    auto result = store::check_series(db, settings);
    return ToolOutput{store::to_json(result), store::check_text(result)};
  };
  return t;
}

}  // namespace magpie::mcp::detail
