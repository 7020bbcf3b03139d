#include <fmt/format.h>

#include <algorithm>

#include "core/statistics.hpp"
#include "html/charts.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

Page kernel_page(const KernelReportInput& in) {
  static const std::vector<kernel::Evaluation> kNone;
  const auto& evals = in.evaluations ? *in.evaluations : kNone;
  Page page;
  page.kind = in.compare ? "compare" : "analyze";
  page.title = in.compare ? "Kernel compare" : "Kernel analyze";
  page.facts = {{"GPU", in.gpu.empty() ? "none" : in.gpu},
                {"time", in.timestamp},
                {"implementations", std::to_string(evals.size())}};
  if (in.compare && in.ranking && in.ranking->baseline < evals.size()) {
    page.facts.emplace_back("baseline", evals[in.ranking->baseline].spec.id);
    page.facts.emplace_back("practical-equivalence band",
                            fmt::format("±{:.1f}%", 100 * in.verdict_settings.threshold));
    page.facts.emplace_back("confidence",
                            fmt::format("{:.0f}%", 100 * in.verdict_settings.confidence));
    if (!in.ranking->summary.empty()) page.facts.emplace_back("summary", in.ranking->summary);
  }

  Section overview{"Implementations", "", {}, {}};
  Table t{{"#", "id", "compile", "correctness", "performance", "timing", "median (µs)", "samples",
           "rank", "speedup vs baseline", "CI", "verdict", "errors"},
          {}};
  for (const auto& e : evals) {
    auto samples = e.samples_ns();
    std::sort(samples.begin(), samples.end());
    std::vector<std::string> row = {
        std::to_string(e.index),
        e.spec.id,
        to_string(e.compiling.state),
        to_string(e.correctness.state),
        to_string(e.performance.state),
        e.timing_source(),
        samples.empty() ? "" : format_number(stats::median_sorted(samples) / 1e3),
        std::to_string(samples.size()),
        "",
        "",
        "",
        "",
        ""};
    if (in.ranking && e.index < in.ranking->rows.size()) {
      const auto& r = in.ranking->rows[e.index];
      if (r.rank) row[8] = std::to_string(*r.rank);
      if (r.vs_baseline) {
        row[9] = format_number(r.vs_baseline->speedup);
        row[10] = fmt::format("[{}, {}]", format_number(r.vs_baseline->ci_low),
                              format_number(r.vs_baseline->ci_high));
        row[11] = stats::to_string(r.vs_baseline->verdict);
      } else if (in.ranking->baseline == e.index) {
        row[11] = "baseline";
      } else if (!r.reason.empty()) {
        row[11] = r.reason;
      }
    }
    std::string errors;
    for (const auto& x : e.errors) errors += (errors.empty() ? "" : "; ") + x;
    row[12] = shorten(errors, 200);
    t.rows.push_back(std::move(row));
  }
  overview.tables.push_back(std::move(t));
  page.sections.push_back(std::move(overview));

  if (in.compare && in.ranking) {
    std::vector<IntervalRow> rows;
    for (const auto& r : in.ranking->rows)
      if (r.vs_baseline)
        rows.push_back({evals[r.index].spec.id, r.vs_baseline->speedup, r.vs_baseline->ci_low,
                        r.vs_baseline->ci_high, stats::to_string(r.vs_baseline->verdict)});
    if (!rows.empty()) {
      Section s{"Speedup against the baseline", "", {}, {}};
      s.charts.push_back(interval_chart(
          "Speedup = baseline median / candidate median, with its bootstrap CI",
          fmt::format(
              "> 1: the candidate is faster. SAME when the whole CI lies within ±{:.1f}%; FASTER/"
              "SLOWER when it lies beyond; AMBIGUOUS otherwise.",
              100 * in.verdict_settings.threshold),
          rows, "speedup (×)", 1.0));
      page.sections.push_back(std::move(s));
    }
  }

  std::vector<Series> distributions, medians_by_round;
  size_t max_rounds = 0;
  for (const auto& e : evals) {
    auto samples = e.samples_ns();
    if (samples.empty()) continue;
    Series s{e.spec.id, {}};
    for (double v : samples) s.values.push_back(v / 1e3);
    distributions.push_back(std::move(s));
    Series m{e.spec.id, {}};
    for (const auto& round : e.samples_by_round()) {
      if (round.empty()) continue;
      std::vector<double> r(round);
      std::sort(r.begin(), r.end());
      m.values.push_back(stats::median_sorted(r) / 1e3);
    }
    max_rounds = std::max(max_rounds, m.values.size());
    medians_by_round.push_back(std::move(m));
  }
  if (!distributions.empty()) {
    Section s{"Latency distribution", "", {}, {}};
    s.two_columns = true;
    s.charts.push_back(
        ecdf_chart("Per-implementation latency (all measured samples)",
                   "Curves to the left are faster; a steep curve is a stable kernel.",
                   distributions, "latency (µs)"));
    std::vector<XYSeries> lines;
    for (const auto& m : medians_by_round) {
      XYSeries x{m.label, {}, m.values, {}, true};
      for (size_t i = 0; i < m.values.size(); ++i) x.x.push_back(static_cast<double>(i + 1));
      lines.push_back(std::move(x));
    }
    if (max_rounds > 1)
      s.charts.push_back(xy_chart("Median per round (interleaved rounds)",
                                  "Drift across rounds shows up here and widens the CIs.", lines,
                                  "round", "median latency (µs)"));
    Table p{{"id", "samples", "min (µs)", "p50 (µs)", "p90 (µs)", "p99 (µs)", "max (µs)"}, {}};
    for (auto& d : distributions) {
      std::sort(d.values.begin(), d.values.end());
      p.rows.push_back({d.label, std::to_string(d.values.size()), format_number(d.values.front()),
                        format_number(stats::percentile_sorted(d.values, 50)),
                        format_number(stats::percentile_sorted(d.values, 90)),
                        format_number(stats::percentile_sorted(d.values, 99)),
                        format_number(d.values.back())});
    }
    s.tables.push_back(std::move(p));
    page.sections.push_back(std::move(s));
  }
  return page;
}

}  // namespace magpie::html
