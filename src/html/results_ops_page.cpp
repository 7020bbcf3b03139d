// `magpie results diff --ops --html`: the op/kernel tables of two or more
// workspaces side by side, per section a chart of each op's time in every
// workspace and one of each candidate's change, and the table.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "html/charts.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

namespace {

constexpr size_t kTopOps = 20;
constexpr size_t kNameChars = 60;

std::string short_name(const std::string& name) {
  return name.size() <= kNameChars ? name : name.substr(0, kNameChars - 1) + "…";
}

}  // namespace

std::string op_change(const std::optional<store::OpCell>& base,
                      const std::optional<store::OpCell>& cand, double band) {
  if (!base && !cand) return "";
  if (!cand) return "only in baseline";
  if (!base) return "only in candidate";
  if (!(base->time_us > 0)) return "no baseline time";
  const double change = (cand->time_us - base->time_us) / base->time_us;
  if (std::abs(change) <= band) return fmt::format("within ±{:.0f}%", band * 100);
  return fmt::format("{} {:.1f}%", change < 0 ? "less time" : "more time", std::abs(change) * 100);
}

Page results_ops_page(const store::OpTableComparison& table, double band) {
  Page page;
  page.kind = "results_diff_ops";
  page.title = "Op/kernel tables side by side";
  for (size_t i = 0; i < table.labels.size(); ++i)
    page.facts.emplace_back(i == 0 ? "baseline" : fmt::format("candidate {}", i),
                            fmt::format("{} ({})", table.labels[i], table.workspaces[i].string()));
  page.facts.emplace_back("change band", fmt::format("±{:.0f}%", band * 100));
  page.warnings = table.warnings;
  const size_t n = table.labels.size();
  for (const auto& section : table.sections) {
    std::vector<const store::OpRow*> rows;
    for (const auto& r : table.rows)
      if (r.section == section) rows.push_back(&r);
    Section s{section,
              "One trace per workspace: the tables hold totals, not samples, so these changes "
              "carry no confidence interval. A change inside the band is reported as such; "
              "anything larger is a change in the tables, to be confirmed by repeated runs "
              "(magpie results diff on benchmarks) or a kernel compare (magpie compare).",
              {},
              {}};
    std::vector<std::string> labels;
    std::vector<Series> times(n);
    for (size_t w = 0; w < n; ++w) times[w].label = table.labels[w];
    std::vector<Series> deltas;
    for (size_t w = 1; w < n; ++w) deltas.push_back({table.labels[w], {}});
    for (size_t k = 0; k < rows.size() && k < kTopOps; ++k) {
      const auto& r = *rows[k];
      labels.push_back(short_name(r.name));
      for (size_t w = 0; w < n; ++w) times[w].values.push_back(r.cells[w] ? r.cells[w]->time_us : 0);
      for (size_t w = 1; w < n; ++w) {
        const auto& b = r.cells[0];
        const auto& c = r.cells[w];
        deltas[w - 1].values.push_back(b && c && b->time_us > 0
                                           ? (c->time_us - b->time_us) / b->time_us * 100
                                           : 0);
      }
    }
    std::string top = rows.size() > kTopOps
                          ? fmt::format("The {} ops with the most baseline time of {}.", kTopOps,
                                        rows.size())
                          : fmt::format("All {} ops, by baseline time.", rows.size());
    auto time_chart =
        bar_chart("GPU time per op", top + " One bar per workspace.", labels, times, "time (µs)");
    time_chart.height_px = std::max(320, static_cast<int>(labels.size() * n * 14 + 80));
    s.charts.push_back(std::move(time_chart));
    auto delta_chart =
        bar_chart("Change against the baseline", "Candidate time minus baseline time, in % of "
                                                 "the baseline (< 0: less time); 0 where an op is "
                                                 "missing from one table.",
                  labels, deltas, "change (%)");
    delta_chart.height_px = std::max(320, static_cast<int>(labels.size() * (n - 1) * 14 + 80));
    s.charts.push_back(std::move(delta_chart));

    Table t{{"op"}, {}};
    for (size_t w = 0; w < n; ++w) {
      t.columns.push_back(table.labels[w] + " time (µs)");
      t.columns.push_back(table.labels[w] + " calls");
    }
    for (size_t w = 1; w < n; ++w) t.columns.push_back(table.labels[w] + " change");
    for (const auto* r : rows) {
      std::vector<std::string> row{r->name};
      for (size_t w = 0; w < n; ++w) {
        row.push_back(r->cells[w] ? format_number(r->cells[w]->time_us) : "");
        row.push_back(r->cells[w] ? std::to_string(r->cells[w]->calls) : "");
      }
      for (size_t w = 1; w < n; ++w) row.push_back(op_change(r->cells[0], r->cells[w], band));
      t.rows.push_back(std::move(row));
    }
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
  if (table.sections.empty())
    page.sections.push_back({"Nothing to compare", "No section is in every workspace.", {}, {}});
  return page;
}

}  // namespace magpie::html
