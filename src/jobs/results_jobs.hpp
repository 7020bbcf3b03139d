#pragma once
// Results-store jobs: the recorded runs (`magpie results list`) and the diff of
// runs or workspaces (`magpie results diff`), as typed calls. The CLI and the
// Python API (Magpie.results) both come here: which runs a target names, which
// repeats the store adds to a side, and whether the diff is of reports or of
// op tables are decided once, here.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/op_table_compare.hpp"
#include "store/report_diff.hpp"
#include "store/results_store.hpp"

namespace magpie::jobs {

struct ResultsListRequest {
  std::filesystem::path store;  // empty = the default store (store::ResultsStore::default_path)
  std::string kind;             // "" = any; analyze, compare, benchmark, gap_analysis, tracelens
  std::string status;           // "" = any; running, succeeded, failed, cancelled, incomplete
  size_t limit = 20;            // 0 = all
};

// Newest first. Throws Error(kUsage) for an unknown kind or status.
std::vector<store::RunRecord> list_runs(const ResultsListRequest& request);

struct ResultsDiffRequest {
  std::filesystem::path store;
  // Run ids or workspace folders, baseline first; repeats of one config joined by commas ("3,5").
  std::vector<std::string> targets;
  std::vector<std::string> labels;  // one per target, or none
  bool ops = false;                 // op tables side by side (found by itself for gap/TraceLens folders)
  bool no_repeats = false;          // no repeats taken from the store
  bool aa = false;                  // the runs are all of one config
  std::optional<double> threshold, run_noise;
  std::optional<int> resamples;
};

struct ResultsDiffOutcome {
  // One of the two: a diff of reports, or (ops) the op tables side by side.
  std::optional<store::ReportDiff> diff;
  std::optional<store::OpTableComparison> ops;
  std::vector<std::string> notes;  // what the CLI prints on stderr: repeats pooled, A/A pairs
  bool regression = false;         // any verdict SLOWER
};

// Throws Error: kUsage (labels, an empty target), kNotFound (an unknown run id,
// a gone workspace), and whatever store::diff_reports / compare_op_tables throw.
ResultsDiffOutcome diff_runs(const ResultsDiffRequest& request);

struct ResultsSiteRequest {
  std::filesystem::path store;       // empty = the default store
  std::filesystem::path output_dir;  // made, or replaced when it holds an earlier site
  std::string since;                 // "" = all; else as `results check --since`
};

struct ResultsSiteOutcome {
  std::filesystem::path index;  // output_dir/index.html
  size_t series = 0, runs = 0;
  size_t linked_points = 0;  // points of the headline metrics linked to a run's report
};

// `magpie results site`: a static, offline site over the store (index.html and
// series/<id>.html, html/html_reports.hpp), built in a folder beside
// output_dir and renamed into place, so a reader sees the old site or the new
// one. Throws Error(kUsage) when output_dir is a file, or a folder that is
// neither empty nor a site made here; kUsage for a bad `since`.
ResultsSiteOutcome build_results_site(const ResultsSiteRequest& request);

}  // namespace magpie::jobs
