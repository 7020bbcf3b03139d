#include <fmt/format.h>

#include <map>

#include "html/charts.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

Page gap_analysis_page(const analysis::GapAnalysisResult& result) {
  Page page;
  page.kind = "gap_analysis";
  page.title = "Gap analysis: where GPU time goes";
  const auto& cfg = result.config;
  page.facts = {
      {"ranks", std::to_string(result.ranks.size())},
      {"kernel time (sum over ranks)", format_us(result.total_duration_us)},
      {"kernel names", std::to_string(result.merged.size())},
      {"window", fmt::format("{}% – {}% of each rank's span", cfg.start_pct, cfg.end_pct)}};
  for (const auto& s : result.skipped)
    page.warnings.push_back(fmt::format("skipped {}: {}", s.file, s.reason));
  for (const auto& w : result.warnings) page.warnings.push_back(w);

  auto rows = analysis::make_rows(result.merged, result.total_duration_us, cfg.top_k);
  Section top{"Top kernels", "", {}, {}};
  {
    std::vector<std::string> labels;
    Series total{"total (µs)", {}};
    for (const auto& r : rows) {
      labels.push_back(shorten(r.parsed.normalized.empty() ? r.name : r.parsed.normalized, 80));
      total.values.push_back(r.total_us);
    }
    top.charts.push_back(
        bar_chart(fmt::format("Top {} kernels by total GPU time", rows.size()),
                  "Summed over all ranks; the table below has full names and shapes.", labels,
                  {total}, "total time (µs)"));
    Table t{{"#", "kernel", "calls", "total (µs)", "avg (µs)", "median (µs)", "% total",
             "cumulative %", "launching op", "input shapes"},
            {}};
    size_t i = 0;
    for (const auto& r : rows)
      t.rows.push_back({std::to_string(++i), r.name, std::to_string(r.calls),
                        format_number(r.total_us), format_number(r.avg_us),
                        format_number(r.median_us), format_number(r.pct_total),
                        format_number(r.cumulative_pct), r.launching_op, r.input_shapes});
    top.tables.push_back(std::move(t));
  }
  page.sections.push_back(std::move(top));

  // Every kernel (not only the top K) by category.
  Section categories{"Kernel time by category", "", {}, {}};
  {
    auto all = analysis::make_rows(result.merged, result.total_duration_us, result.merged.size());
    std::map<std::string, double> by_category;
    for (const auto& r : all)
      by_category[std::string(sources::to_string(r.parsed.category))] += r.total_us;
    std::vector<std::pair<std::string, double>> sorted(by_category.begin(), by_category.end());
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
    std::vector<std::string> labels;
    Series s{"total (µs)", {}};
    for (const auto& [k, v] : sorted) {
      labels.push_back(k);
      s.values.push_back(v);
    }
    categories.charts.push_back(bar_chart("GPU time by kernel category", "All kernels, all ranks.",
                                          labels, {s}, "total time (µs)"));
  }
  page.sections.push_back(std::move(categories));

  Section timeline{
      "GPU timeline per rank",
      "Interval unions: overlapping streams count once; communication and copies count "
      "only where no computation hides them.",
      {},
      {}};
  {
    std::vector<std::string> labels;
    Series comp{"computation", {}}, comm{"exposed communication", {}}, copy{"exposed memcpy", {}},
        idle{"idle", {}};
    for (const auto& r : result.ranks) {
      labels.push_back(fmt::format("rank {}", r.rank));
      comp.values.push_back(r.timeline.computation_us / 1000.0);
      comm.values.push_back(r.timeline.exposed_communication_us / 1000.0);
      copy.values.push_back(r.timeline.exposed_memcpy_us / 1000.0);
      idle.values.push_back(r.timeline.idle_us / 1000.0);
    }
    timeline.charts.push_back(bar_chart("Where each rank's GPU span goes", "", labels,
                                        {comp, comm, copy, idle}, "time (ms)", true, true));
  }
  page.sections.push_back(std::move(timeline));
  return page;
}

}  // namespace magpie::html
