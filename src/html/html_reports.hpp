#pragma once
// One self-contained HTML report per kind of result (docs/HTML_REPORTS.md):
// built from the typed results the other libraries return, except for the
// parts only their written files hold (TraceLens stage tables, the serving
// workspace's per-request records), which small readers here load.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/gap_analysis.hpp"
#include "analysis/tracelens_report.hpp"
#include "analysis/trace_diff.hpp"
#include "core/verdict.hpp"
#include "html/html_page.hpp"
#include "kernel/evaluation.hpp"
#include "kernel/ranking.hpp"
#include "store/op_table_compare.hpp"
#include "store/report_diff.hpp"
#include "store/series.hpp"

namespace magpie::html {

// `magpie benchmark --trace-dir`: top kernels, time by category, each rank's
// GPU timeline.
Page gap_analysis_page(const analysis::GapAnalysisResult& result);

// `magpie tracelens`: per stage, the GPU time split, op categories, top
// kernels and the roofline scatter (from the stage CSVs it wrote).
Page tracelens_page(const analysis::TraceLensResult& result);

// `magpie analyze|compare`: per implementation the stages, the latency
// distribution and round medians; for compare the speedup CIs and verdicts.
struct KernelReportInput {
  bool compare = false;
  std::string gpu;
  std::string timestamp;
  const std::vector<kernel::Evaluation>* evaluations = nullptr;
  const kernel::Ranking* ranking = nullptr;  // compare only
  stats::VerdictSettings verdict_settings;
};
Page kernel_page(const KernelReportInput& input);

// `magpie results diff`: per metric (per kernel) the change with its CI and verdict.
Page results_diff_page(const store::ReportDiff& diff);

// `magpie results diff --ops`: per section a chart of each op's time in every
// workspace, one of each candidate's change in %, and the table with each
// change described against `band` (one trace a side: no CI, no verdict).
Page results_ops_page(const store::OpTableComparison& table, double band = 0.05);
// "within ±5%", "less time 23.0%", "more time 8.2%", "only in baseline", ...
std::string op_change(const std::optional<store::OpCell>& base,
                      const std::optional<store::OpCell>& candidate, double band);

// A serving benchmark workspace (benchmark_report.json and the per-request
// records): latency distributions and percentiles per case, throughput
// against latency over a sweep, a per-request timeline. Throws
// Error(kNotFound/kBadFormat) naming the file.
Page serving_page(const std::filesystem::path& workspace);

// `magpie trace-diff`: the critical path by category and the matched ops and
// kernels, before beside after.
Page trace_diff_page(const analysis::TraceDiff& diff);

// `magpie results site`: the index of every series (kind, GPU, engine, model,
// points, last value, the latest confirmed change and its verdict), each row
// linked to its page at results_series_page_path(id), relative to the index.
Page results_site_index_page(const std::vector<store::SeriesOverview>& series,
                             const std::string& store_name, const std::string& since = {});
// One series: per key metric a trend chart (points, CI band, change points)
// and its changes, then the points' runs. `report_links` maps a run's
// workspace (as recorded) to its HTML report, relative to this page; a point
// links to the first of its runs that has one. `since`: points from then on.
Page results_series_page(const store::SeriesOverview& series,
                         const std::map<std::string, std::string>& report_links,
                         const std::string& since = {});
std::string results_series_page_path(const std::string& series_id);  // "series/<id>.html"

// Renders and writes atomically; returns the path.
std::filesystem::path write_page(const Page& page, const std::filesystem::path& path);

}  // namespace magpie::html
