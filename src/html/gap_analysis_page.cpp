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

  // What sets end-to-end time, and which fix buys most (docs/OPTIMIZATION_LOOP.md).
  for (const auto& r : result.ranks) {
    if (!r.critical_path) continue;
    const auto& cp = *r.critical_path;
    Section sec{fmt::format("Critical path, rank {}", r.rank), analysis::headline(cp), {}, {}, true};
    const auto pct = [](int64_t part, int64_t whole) {
      return format_number(whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
    };
    Table windows{{"window", "stage", "length (µs)"}, {}};
    for (size_t c = 0; c < analysis::kPathCategories; ++c)
      windows.columns.push_back(std::string(analysis::to_string(static_cast<analysis::PathCategory>(c))) + " %");
    auto add_window = [&](const std::string& what, const analysis::PathWindowSummary& w) {
      std::vector<std::string> row{what + ": " + w.label, w.stage, format_number(static_cast<double>(w.length_ns) / 1e3)};
      for (size_t c = 0; c < analysis::kPathCategories; ++c) row.push_back(pct(w.by_category[c], w.length_ns));
      windows.rows.push_back(std::move(row));
    };
    add_window("whole trace", cp.whole);
    if (cp.median_step) add_window("median step", *cp.median_step);
    sec.tables.push_back(std::move(windows));
    Table recs{{"#", "fix", "target", "predicted gain (µs)", "gain %", "kernel-time rank"}, {}};
    size_t i = 0;
    for (const auto& rec : analysis::rank_recommendations(cp))
      recs.rows.push_back({std::to_string(++i), rec.kind, rec.target,
                           format_number(static_cast<double>(rec.gain_ns) / 1e3), format_number(rec.gain_pct),
                           rec.kernel_rank ? std::to_string(rec.kernel_rank) : std::string("-")});
    sec.tables.push_back(std::move(recs));
    Table ops{{"op", "critical path %", "kernel time %", "gain if GPU work = 0 (µs)", "gain if host time = 0 (µs)"},
              {}};
    for (const auto& o : cp.ops) {
      std::string gb = "-", hb = "-";
      for (const auto& b : cp.bounds) {
        if (b.name != o.name) continue;
        gb = format_number(static_cast<double>(b.gpu_gain_ns) / 1e3);
        hb = format_number(static_cast<double>(b.host_gain_ns) / 1e3);
      }
      ops.rows.push_back({o.name, pct(o.path_ns, cp.whole.length_ns), pct(o.kernel_ns, cp.gpu_total_ns), gb, hb});
    }
    sec.tables.push_back(std::move(ops));
    page.sections.push_back(std::move(sec));
  }
  return page;
}

}  // namespace magpie::html
