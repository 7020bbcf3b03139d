#include <fmt/format.h>

#include "analysis/trace_diff.hpp"
#include "html/charts.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

namespace {

using analysis::DiffStatus;
using analysis::kPathCategories;

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
std::string delta_us(int64_t ns) { return fmt::format("{:+.1f}", us(ns)); }

}  // namespace

Page trace_diff_page(const analysis::TraceDiff& d) {
  Page page;
  page.kind = "trace_diff";
  page.title = "Trace diff";
  const auto& b = d.before;
  const auto& a = d.after;
  page.facts.emplace_back("before", fmt::format("{} ({})", b.path, b.bound));
  page.facts.emplace_back("after", fmt::format("{} ({})", a.path, a.bound));
  page.facts.emplace_back("whole window", fmt::format("{} → {} ({} µs)", format_us(us(b.window_ns)),
                                                      format_us(us(a.window_ns)), delta_us(a.window_ns - b.window_ns)));
  const bool steps = b.iterations && a.iterations;
  if (steps)
    page.facts.emplace_back("median iteration",
                            fmt::format("{} → {} ({} µs; {} vs {} iterations)", format_us(us(b.median_step_ns)),
                                        format_us(us(a.median_step_ns)),
                                        delta_us(a.median_step_ns - b.median_step_ns), b.iterations, a.iterations));
  page.facts.emplace_back("ops", fmt::format("{} changed, {} added, {} removed, {} unchanged",
                                             d.count_ops(DiffStatus::kChanged), d.count_ops(DiffStatus::kAdded),
                                             d.count_ops(DiffStatus::kRemoved), d.count_ops(DiffStatus::kUnchanged)));
  page.facts.emplace_back(
      "kernels", fmt::format("{} changed, {} moved, {} added, {} removed, {} unchanged",
                             d.count_kernels(DiffStatus::kChanged), d.count_kernels(DiffStatus::kMoved),
                             d.count_kernels(DiffStatus::kAdded), d.count_kernels(DiffStatus::kRemoved),
                             d.count_kernels(DiffStatus::kUnchanged)));
  page.warnings = d.warnings;

  // The end-to-end change by category, before beside after.
  {
    const auto& bb = steps ? b.step : b.window;
    const auto& aa = steps ? a.step : a.window;
    std::vector<std::string> labels{"before", "after"};
    std::vector<Series> series;
    Table t{{"category", "before (µs)", "after (µs)", "change (µs)"}, {}};
    for (size_t c = 0; c < kPathCategories; ++c) {
      const char* name = analysis::to_string(static_cast<analysis::PathCategory>(c));
      series.push_back({name, {us(bb[c]), us(aa[c])}});
      t.rows.push_back({name, format_number(us(bb[c])), format_number(us(aa[c])), delta_us(aa[c] - bb[c])});
    }
    Section s{steps ? "Critical path of the median iteration" : "Critical path of the whole window",
              "What set the end-to-end time on each side: the critical path split into host work, launch "
              "overhead, GPU work, sync waits, collectives and idle. The change in each category sums to the "
              "end-to-end change.",
              {},
              {}};
    s.charts.push_back(bar_chart("Critical path by category", "One stacked bar per side; µs.", labels, series,
                                 "µs", true, true));
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
  {
    Table t{{"op", "on path before (µs)", "on path after (µs)", "change (µs)", "GPU before (µs)", "GPU after (µs)"},
            {}};
    std::vector<std::string> labels;
    std::vector<Series> series{{"before", {}}, {"after", {}}};
    const bool step_ops = !d.path_ops_step.empty();
    for (const auto& p : step_ops ? d.path_ops_step : d.path_ops) {
      if (t.rows.size() >= 15 || p.delta_ns() == 0) break;
      t.rows.push_back({p.name, format_number(us(p.path_before_ns)), format_number(us(p.path_after_ns)),
                        delta_us(p.delta_ns()), step_ops ? "" : format_number(us(p.gpu_before_ns)),
                        step_ops ? "" : format_number(us(p.gpu_after_ns))});
      labels.push_back(shorten(p.name, 60));
      series[0].values.push_back(us(p.path_before_ns));
      series[1].values.push_back(us(p.path_after_ns));
    }
    Section s{"Ops whose critical-path time changed most",
              step_ops ? "Time each op (by name) spent on the median iteration's critical path, before beside after."
                       : "Time each op (by name) spent on the whole window's critical path, before beside after.",
              {},
              {}};
    if (!labels.empty())
      s.charts.push_back(bar_chart("Time on the critical path", "Before beside after; µs.", labels, series, "µs"));
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
  {
    Table t{{"status", "op", "under", "input dims", "calls", "host before (µs)", "host after (µs)", "GPU before (µs)",
             "GPU after (µs)"},
            {}};
    for (const auto& r : d.ops) {
      if (t.rows.size() >= 200) break;
      t.rows.push_back({analysis::to_string(r.status), r.name(), r.parent, r.shapes,
                        fmt::format("{} → {}", r.calls_before, r.calls_after), format_number(us(r.host_before_ns)),
                        format_number(us(r.host_after_ns)), format_number(us(r.gpu_before_ns)),
                        format_number(us(r.gpu_after_ns))});
    }
    page.sections.push_back({"Ops, matched by their place in the op tree",
                             "Host and GPU time include the op's children. Most change first; the full list is "
                             "trace_diff_ops.csv.",
                             {},
                             {std::move(t)}});
  }
  {
    Table t{{"status", "kernel", "launched by (before)", "launched by (after)", "calls", "GPU before (µs)",
             "GPU after (µs)"},
            {}};
    for (const auto& k : d.kernels) {
      if (t.rows.size() >= 200) break;
      t.rows.push_back({analysis::to_string(k.status), k.name(), k.op_before, k.op_after,
                        fmt::format("{} → {}", k.calls_before, k.calls_after), format_number(us(k.gpu_before_ns)),
                        format_number(us(k.gpu_after_ns))});
    }
    page.sections.push_back({"Kernels, matched by their launching op",
                             "A kernel launched from a different op after the change (eager → CUDA graph) is "
                             "'moved'. Full list: trace_diff_kernels.csv.",
                             {},
                             {std::move(t)}});
  }
  return page;
}

}  // namespace magpie::html
