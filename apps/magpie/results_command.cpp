#include "results_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "report/text_table.hpp"
#include "store/op_table_compare.hpp"
#include "html/html_reports.hpp"
#include "jobs/results_jobs.hpp"
#include "store/report_diff.hpp"
#include "store/report_diff_writers.hpp"
#include "store/results_store.hpp"
#include "store/run_record_json.hpp"
#include "store/series.hpp"
#include "store/series_writers.hpp"
#include "store/workspace_import.hpp"

namespace magpie::app {

namespace fs = std::filesystem;
using store::ResultsStore;
using store::RunRecord;

namespace {

// `results check` found a regression (README "Exit codes"): not an error, a verdict.
constexpr int kExitRegression = 9;

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string short_commit(const std::string& c) { return c.substr(0, 10); }

std::string workspace_cell(const RunRecord& r) {
  if (r.workspace.empty()) return "-";
  return r.workspace_exists ? r.workspace : r.workspace + " (missing)";
}

// A few metrics worth a glance in `list`, by kind.
std::string key_metrics(const RunRecord& r) {
  auto get = [&](const char* name) -> const double* {
    auto it = r.metrics.find(name);
    return it == r.metrics.end() ? nullptr : &it->second;
  };
  std::string out;
  auto add = [&](const char* name, const char* fmt_str) {
    if (auto* v = get(name)) {
      if (!out.empty()) out += ", ";
      out += fmt::format(fmt::runtime(fmt_str), *v);
    }
  };
  switch (r.kind) {
    case store::RunKind::kBenchmark:
      add("request_throughput", "{:.2f} req/s");
      add("output_throughput", "{:.1f} tok/s");
      add("ttft.p99_ms", "TTFT p99 {:.1f} ms");
      break;
    case store::RunKind::kGapAnalysis:
      add("total_duration_us", "{:.0f} us GPU");
      add("num_ranks", "{:.0f} ranks");
      break;
    default:
      if (!r.metrics.empty()) out = fmt::format("{} metrics", r.metrics.size());
  }
  return out;
}

std::string show_text(const RunRecord& r) {
  std::string out;
  auto line = [&](const char* k, const std::string& v) {
    if (!v.empty()) out += fmt::format("{:<14}{}\n", k, v);
  };
  line("id", r.id ? std::to_string(r.id) : "(not in the store)");
  line("kind", std::string(store::to_string(r.kind)));
  line("status", std::string(store::to_string(r.status)));
  line("face", r.face);
  line("started", r.started_at);
  line("finished", r.finished_at);
  line("workspace", workspace_cell(r));
  line("command", r.command_line);
  line("config hash", r.config_hash);
  line("git commit", r.git_commit);
  line("gpu", r.gpu);
  if (r.pid) line("process", fmt::format("{} on {}", r.pid, r.host));
  line("error", r.error);
  for (const auto& [k, v] : r.metadata) line(k.c_str(), v);
  if (!r.metrics.empty()) {
    out += "metrics:\n";
    for (const auto& [k, v] : r.metrics) out += fmt::format("  {:<36}{:g}\n", k, v);
  }
  return out;
}

}  // namespace

void ResultsCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "results",
      "The results store: every analyze, compare, benchmark, gap analysis and tracelens run, with "
      "its\n"
      "status, workspace, git commit and key metrics (SQLite at ~/.magpie/results.db, or\n"
      "$MAGPIE_RESULTS_DB). Diff serving benchmarks metric by metric with bootstrap CIs and "
      "verdicts.\n"
      "Examples:\n"
      "  magpie results import ./results                 # index workspaces made before the store\n"
      "  magpie results list --kind benchmark --limit 5\n"
      "  magpie results show 12                          # or: magpie results show "
      "./results/benchmark_vllm_...\n"
      "  magpie results diff 12 15                       # baseline run 12 vs candidate run 15\n"
      "  magpie results diff base/ new1/ new2/ --format csv -o diff.csv\n"
      "  magpie results diff gapA/ gapB/ --ops           # kernel tables side by side "
      "(gap/TraceLens)\n"
      "  magpie results series                           # runs grouped into comparable series\n"
      "  magpie results history 3f2a9c01de --metric ttft.median_ms\n"
      "  magpie results check --since 7d --junit check.xml   # exit 9 on a regression\n"
      "  magpie results site -o site                     # static offline site of every series\n"
      "See docs/RESULTS.md.");
  sub_->require_subcommand(1);
  sub_->add_option("--db", db_,
                   "Results store: a file or a postgresql:// URL (default $MAGPIE_RESULTS_DB or "
                   "~/.magpie/results.db)");

  list_ = sub_->add_subcommand(
      "list", "Recorded runs, newest first.\nExample: magpie results list --status failed");
  list_->add_option("--kind", kind_, "analyze, compare, benchmark, gap_analysis or tracelens")
      ->check(CLI::IsMember({"analyze", "compare", "benchmark", "gap_analysis", "tracelens"}));
  list_->add_option("--status", status_, "running, succeeded, failed, cancelled or incomplete")
      ->check(CLI::IsMember({"running", "succeeded", "failed", "cancelled", "incomplete"}));
  list_->add_option("--limit", limit_, "At most N runs (0 = all)")->capture_default_str();
  list_->add_flag("--json", json_, "JSON array instead of a table");

  show_ = sub_->add_subcommand("show",
                               "One run with all its metrics.\nExamples: magpie results show 7; "
                               "magpie results show ./results/compare_x");
  show_->add_option("run", target_, "Run id, or a workspace directory")->required();
  show_->add_flag("--json", json_, "JSON instead of text");

  diff_ = sub_->add_subcommand(
      "diff",
      "Compare workspaces against the first (the baseline). Serving benchmarks: request/output "
      "throughput\n"
      "and TTFT/TPOT/ITL/E2EL mean, median, p99, each with a bootstrap CI over the per-request "
      "records\n"
      "and a verdict FASTER/SLOWER/SAME/AMBIGUOUS (SAME: CI inside ±threshold). Kernel compares: "
      "each\n"
      "kernel's median time, a verdict from the per-round medians, and the verdict stored by that "
      "run.\n"
      "--ops: the gap analysis / TraceLens kernel tables side by side (CSV).\n"
      "Examples:\n"
      "  magpie results diff 3 4\n"
      "  magpie results diff ./results/benchmark_vllm_A ./results/benchmark_vllm_B --label "
      "before,after\n"
      "  magpie results diff 3 4 5 --format json -o diff.json --fail-on-regression\n"
      "  magpie results diff 3,5 4,6                     # two runs a side: run-to-run noise "
      "measured\n"
      "Between runs, a verdict is FASTER/SLOWER only beyond the run-to-run noise: the spread of "
      "repeats of\n"
      "one config (given with commas, or found in the store: same command, config hash, commit, "
      "GPU, host),\n"
      "or --run-noise; with one run a side such verdicts are AMBIGUOUS (unconfirmed). See "
      "docs/RESULTS.md.");
  diff_->add_option("runs", targets_,
                    "Run ids or workspace directories, baseline first; repeats of one config "
                    "joined by commas (3,5) are pooled and measure run-to-run noise")
      ->required()
      ->expected(2, -1);
  diff_->add_option("--label", labels_, "Labels for the columns, one per run (comma-separated)")
      ->delimiter(',');
  diff_->add_option("--format", format_, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  diff_->add_option("-o,--output", output_, "Write to FILE (atomically) instead of stdout");
  diff_->add_flag(
      "--ops", ops_,
      "Side-by-side op/kernel tables (gap_analysis.csv or TraceLens kernel_summary.csv)");
  diff_
      ->add_option("--threshold", threshold_,
                   "Practical-equivalence band for SAME (default 0.05 serving, 0.02 kernels)")
      ->check(CLI::Range(0.0, 0.99));
  diff_
      ->add_option("--resamples", resamples_,
                   "Bootstrap resamples (default 1000 serving, 2000 kernels)")
      ->check(CLI::Range(100, 100000));
  diff_->add_flag("--fail-on-regression", fail_on_regression_, "Exit 1 when any verdict is SLOWER, or quality WORSE");
  diff_
      ->add_option("--run-noise", run_noise_,
                   "Run-to-run noise measured elsewhere (0.3: two runs of one config differ by up "
                   "to 30%); used when no side has repeats")
      ->check(CLI::Range(0.0, 10.0));
  diff_->add_flag("--no-repeats", no_repeats_,
                  "Diff only the named runs: no repeats taken from the store");
  diff_->add_flag("--aa", aa_,
                  "The runs are all of one config (an A/A measurement): their spread is the "
                  "run-to-run noise, so no verdict can be FASTER/SLOWER");
  diff_->add_option("--html", html_, "Also write FILE: a self-contained HTML page with the changes and their CIs");

  import_ = sub_->add_subcommand("import",
                                 "Index workspaces already on disk (analyze_*, compare_*, "
                                 "benchmark_*, gap_analysis/, tracelens/)\n"
                                 "under DIR, or DIR itself; ones already indexed are "
                                 "skipped. With --from, copy the runs of another store (a file or a\n"
                                 "postgresql:// URL) instead.\nExample: magpie results import ./results");
  auto* import_dir =
      import_->add_option("dir", import_dir_, "Directory holding workspaces (an -o/--output-dir)");
  auto* import_from = import_->add_option(
      "--from", import_from_,
      "Copy the runs of another results store instead: a file or a postgresql:// URL "
      "(runs already here are skipped)");
  import_dir->excludes(import_from);
  import_from->excludes(import_dir);
  import_->require_option(1);

  export_ = sub_->add_subcommand(
      "export",
      "Copy every run of this store (metrics and metadata included) into another store: a "
      "SQLite file\n"
      "or a postgresql:// URL. Runs already there are skipped, so it can be rerun.\n"
      "Example: magpie results export --to postgresql://magpie@db.example/magpie_results");
  export_->add_option("--to", export_to_, "The store to copy into (a file or a postgresql:// URL)")
      ->required();

  series_ = sub_->add_subcommand(
      "series",
      "Succeeded runs grouped by what makes them comparable: kind, config hash, GPU model, "
      "engine and\n"
      "version, model and revision, image, workload, host class ($MAGPIE_HOST_CLASS when "
      "recorded, else\n"
      "the host). Each series has a short stable id.\nExample: magpie results series --json");
  series_->add_flag("--json", json_, "JSON array instead of a table");

  history_ = sub_->add_subcommand(
      "history",
      "One metric along a series: a point per commit (repeats averaged, with a 95% CI), the "
      "run-to-run\n"
      "noise, and the confirmed change points.\nExample: magpie results history 3f2a --metric "
      "output_throughput");
  history_->add_option("series", series_id_, "Series id, or a unique prefix of it")->required();
  history_->add_option("--metric", metrics_,
                       "Metric (default: request_throughput for benchmarks, the first kernel "
                       "median, total_duration_us)")
      ->expected(1);
  history_->add_flag("--json", json_, "JSON instead of a table");
  history_
      ->add_option("--min-change", min_change_,
                   "Smallest relative step confirmed (also never below the run-to-run noise)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();

  check_ = sub_->add_subcommand(
      "check",
      "Change points along every series (E-divisive means, permutation test at 1%), confirmed "
      "only when\n"
      "the step exceeds the run-to-run noise; lists regressions and improvements and exits 9 on a "
      "regression.\n"
      "Examples:\n"
      "  magpie results check --since 7d\n"
      "  magpie results check --series 3f2a --metric request_throughput --junit check.xml "
      "--github-summary summary.md");
  check_->add_option("--since", since_,
                     "Only changes at points from DATE on (2026-12-01, 2026-12-01T08:00:00Z, or "
                     "7d for 7 days ago)");
  check_->add_option("--series", series_ids_, "Series ids or prefixes (default: all)")
      ->delimiter(',');
  check_->add_option("--metric", metrics_,
                     "Metrics to check (default per kind: throughputs and median TTFT/TPOT, "
                     "kernel medians, GPU time)")
      ->delimiter(',');
  check_
      ->add_option("--min-change", min_change_,
                   "Smallest relative step confirmed (also never below the run-to-run noise)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  check_->add_flag("--json", json_, "JSON instead of a table");
  check_->add_option("--junit", junit_, "Also write FILE: JUnit XML, a regression is a failed test");
  check_->add_option("--github-summary", github_summary_,
                     "Also write FILE: Markdown for a GitHub Actions job summary");
  check_->add_option("--bmf", bmf_, "Also write FILE: Bencher Metric Format JSON (latest points)");
  check_->add_option("--csv", csv_, "Also write FILE: CSV, one row per change");

  site_ = sub_->add_subcommand(
      "site",
      "A static, offline site over the store: DIR/index.html lists every series (kind, GPU, "
      "engine,\n"
      "model, points, last value, latest change and verdict); DIR/series/<id>.html has a trend "
      "chart per\n"
      "key metric (points, 95% CI band, change points) with each point linked to its run's HTML "
      "report.\n"
      "Built beside DIR and renamed into place; an earlier site in DIR is replaced.\n"
      "Example: magpie results site -o results-site --since 30d");
  site_->add_option("-o,--output", site_dir_, "Folder for the site (new, or an earlier site)")
      ->required();
  site_->add_option("--since", since_,
                    "Only series run since DATE, and their points from then on (2026-12-01, "
                    "2026-12-01T08:00:00Z, or 30d)");
}

int ResultsCommand::run(bool /*verbose*/) {
  if (list_->parsed()) return run_list();
  if (show_->parsed()) return run_show();
  if (diff_->parsed()) return run_diff();
  if (import_->parsed()) return run_import();
  if (export_->parsed())
    return run_copy(db_.empty() ? ResultsStore::default_path() : fs::path(db_), export_to_);
  if (series_->parsed()) return run_series();
  if (history_->parsed()) return run_history();
  if (check_->parsed()) return run_check();
  if (site_->parsed()) return run_site();
  return 0;
}

int ResultsCommand::run_list() {
  jobs::ResultsListRequest request;
  request.store = db_;
  request.kind = kind_;
  request.status = status_;
  request.limit = limit_;
  const auto runs = jobs::list_runs(request);
  if (json_) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : runs) arr.push_back(store::to_json(r));
    std::cout << arr.dump(2) << "\n";
    return 0;
  }
  if (runs.empty()) {
    std::cout << fmt::format(
        "no runs recorded in {} (magpie results import DIR indexes old workspaces)\n",
        ResultsStore::open(db_.empty() ? ResultsStore::default_path() : fs::path(db_)).path().string());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : runs)
    rows.push_back({std::to_string(r.id), std::string(store::to_string(r.kind)),
                    std::string(store::to_string(r.status)), r.started_at.substr(0, 19),
                    r.metadata.count("ray_job_id") ? r.face + " (ray)" : r.face,
                    short_commit(r.git_commit), key_metrics(r), workspace_cell(r)});
  std::cout << report::render_text_table({{"ID", true},
                                          {"Kind"},
                                          {"Status"},
                                          {"Started (UTC)"},
                                          {"Face"},
                                          {"Git"},
                                          {"Key metrics", false, 48},
                                          {"Workspace"}},
                                         rows);
  return 0;
}

int ResultsCommand::run_show() {
  auto db = ResultsStore::open(db_.empty() ? ResultsStore::default_path() : fs::path(db_));
  std::optional<RunRecord> r;
  std::error_code ec;
  if (all_digits(target_) && !fs::is_directory(target_, ec)) {
    r = db.get(std::stoll(target_));
    if (!r)
      throw Error(ErrorKind::kNotFound, fmt::format("no run {} in the results store", target_),
                  db.path().string(), std::nullopt, "`magpie results list` shows the ids");
  } else {
    r = db.find_by_workspace(target_);
    if (!r) r = store::read_workspace(target_);  // on disk but never recorded: show it anyway
    if (!r)
      throw Error(ErrorKind::kNotFound, "neither a recorded run nor a workspace with a report",
                  target_, std::nullopt,
                  "pass a run id from `magpie results list`, or a workspace directory");
  }
  if (json_)
    std::cout << store::to_json(*r).dump(2) << "\n";
  else
    std::cout << show_text(*r);
  return 0;
}

int ResultsCommand::run_diff() {
  jobs::ResultsDiffRequest request;
  request.store = db_;
  request.targets = targets_;
  request.labels = labels_;
  request.ops = ops_;
  request.no_repeats = no_repeats_;
  request.aa = aa_;
  if (threshold_ >= 0) request.threshold = threshold_;
  if (resamples_ > 0) request.resamples = resamples_;
  if (run_noise_ >= 0) request.run_noise = run_noise_;
  const jobs::ResultsDiffOutcome outcome = jobs::diff_runs(request);
  for (const auto& n : outcome.notes) std::cerr << n << "\n";
  std::string text;
  if (outcome.ops) {
    for (const auto& w : outcome.ops->warnings) std::cerr << "warning: " << w << "\n";
    text = store::op_table_csv(*outcome.ops);
    if (!html_.empty()) {
      html::write_page(html::results_ops_page(*outcome.ops, threshold_ >= 0 ? threshold_ : 0.05), html_);
      std::cerr << fmt::format("html report: {}\n", html_);
    }
  } else {
    text = store::write_diff(*outcome.diff, *store::diff_format_from_string(format_));
    if (!html_.empty()) {
      html::write_page(html::results_diff_page(*outcome.diff), html_);
      std::cerr << fmt::format("html report: {}\n", html_);
    }
  }
  if (output_.empty()) {
    std::cout << text;
  } else {
    write_file_atomic(output_, text);
    std::cerr << fmt::format("wrote {}\n", output_);
  }
  return fail_on_regression_ && outcome.regression ? 1 : 0;
}

int ResultsCommand::run_copy(const fs::path& from, const fs::path& to) {
  auto source = ResultsStore::open(from);
  auto dest = ResultsStore::open(to);
  size_t added = dest.copy_runs_from(source);
  std::cout << fmt::format("copied {} run{} from {} into {}\n", added, added == 1 ? "" : "s",
                           source.path().string(), dest.path().string());
  return 0;
}

int ResultsCommand::run_import() {
  if (!import_from_.empty())
    return run_copy(fs::path(import_from_),
                    db_.empty() ? ResultsStore::default_path() : fs::path(db_));
  auto db = ResultsStore::open(db_.empty() ? ResultsStore::default_path() : fs::path(db_));
  size_t added = db.import_workspaces(import_dir_);
  std::cout << fmt::format("imported {} workspace{} from {} into {}\n", added,
                           added == 1 ? "" : "s", import_dir_, db.path().string());
  return 0;
}

int ResultsCommand::run_series() {
  auto db = ResultsStore::open(db_.empty() ? ResultsStore::default_path() : fs::path(db_));
  auto series = store::list_series(db);
  if (json_) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : series) arr.push_back(store::to_json(s));
    std::cout << arr.dump(2) << "\n";
  } else {
    std::cout << store::series_text(series);
  }
  return 0;
}

int ResultsCommand::run_history() {
  auto db = ResultsStore::open(db_.empty() ? ResultsStore::default_path() : fs::path(db_));
  store::ChangeSettings settings;
  settings.min_change = min_change_;
  auto h = store::series_history(db, series_id_, metrics_.empty() ? "" : metrics_.front(), settings);
  std::cout << (json_ ? store::to_json(h).dump(2) + "\n" : store::history_text(h));
  return 0;
}

int ResultsCommand::run_check() {
  auto db = ResultsStore::open(db_.empty() ? ResultsStore::default_path() : fs::path(db_));
  store::CheckSettings settings;
  settings.since = since_;
  settings.series = series_ids_;
  settings.metrics = metrics_;
  settings.change.min_change = min_change_;
  auto result = store::check_series(db, settings);
  std::cout << (json_ ? store::to_json(result).dump(2) + "\n" : store::check_text(result));
  for (const auto& [file, text] : {std::pair{junit_, &store::check_junit},
                                   {github_summary_, &store::check_github_summary},
                                   {bmf_, &store::check_bmf},
                                   {csv_, &store::check_csv}}) {
    if (file.empty()) continue;
    write_file_atomic(file, text(result));
    std::cerr << fmt::format("wrote {}\n", file);
  }
  return result.regression() ? kExitRegression : 0;
}

int ResultsCommand::run_site() {
  jobs::ResultsSiteRequest request;
  request.store = db_;
  request.output_dir = site_dir_;
  request.since = since_;
  const auto outcome = jobs::build_results_site(request);
  std::cout << fmt::format("site of {} series ({} runs, {} points linked to reports): {}\n",
                           outcome.series, outcome.runs, outcome.linked_points,
                           outcome.index.string());
  return 0;
}

}  // namespace magpie::app
