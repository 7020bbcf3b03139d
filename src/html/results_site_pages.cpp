// `magpie results site`: the index of series and one page per series
// (html_reports.hpp). Pure rendering: the job (jobs/results_jobs.cpp) reads
// the store, finds each run's report on disk and writes the files.
#include <fmt/format.h>

#include <algorithm>

#include "html/charts.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

namespace {

std::string short_commit(const std::string& commit) {
  return commit.empty() ? "(no commit)" : commit.substr(0, 10);
}

std::string percent(double relative) { return fmt::format("{:+.1f}%", 100 * relative); }

// The newest change at a point from `since` on, over every metric of the series; at one
// point a regression before an improvement, else the first metric (the headline).
struct LatestChange {
  const store::SeriesHistory* history = nullptr;
  const store::SeriesChange* change = nullptr;
};
LatestChange latest_change(const store::SeriesOverview& o, const std::string& since) {
  LatestChange best;
  for (const auto& h : o.histories)
    for (const auto& c : h.changes) {
      const auto& date = h.points[c.index].date;
      if (!since.empty() && date < since) continue;
      if (!best.change || date > best.history->points[best.change->index].date ||
          (date == best.history->points[best.change->index].date &&
           c.kind == store::ChangeKind::kRegression &&
           best.change->kind != store::ChangeKind::kRegression))
        best = {&h, &c};
    }
  return best;
}

std::string change_text(const store::SeriesHistory& h, const store::SeriesChange& c) {
  const auto& p = h.points[c.index];
  return fmt::format("{} {} {} at {} ({})", to_string(c.kind), h.metric, percent(c.relative),
                     short_commit(p.commit), p.date.substr(0, 10));
}

std::string point_link(const store::SeriesPoint& p,
                       const std::map<std::string, std::string>& report_links) {
  for (const auto& w : p.workspaces)
    if (auto it = report_links.find(w); it != report_links.end()) return it->second;
  return {};
}

std::string run_ids(const store::SeriesPoint& p) {
  std::string out;
  for (auto id : p.run_ids) out += (out.empty() ? "#" : ", #") + std::to_string(id);
  return out;
}

std::string noise_text(const store::NoiseEstimate& n) {
  if (n.basis == "repeats")
    return fmt::format("run-to-run noise {:.1f}% per run, {:.1f}% per point (from {} repeat runs)",
                       100 * n.cv, 100 * n.point_cv, n.repeat_runs);
  if (n.basis == "series")
    return fmt::format("noise {:.1f}% per point (measured along the series: no repeats)",
                       100 * n.cv);
  return "noise not measured";
}

}  // namespace

std::string results_series_page_path(const std::string& series_id) {
  return "series/" + series_id + ".html";
}

Page results_site_index_page(const std::vector<store::SeriesOverview>& series,
                             const std::string& store_name, const std::string& since) {
  Page page;
  page.kind = "results_site";
  page.title = "Performance over time";
  page.facts.emplace_back("results store", store_name);
  size_t runs = 0;
  for (const auto& o : series) runs += o.series.runs;
  page.facts.emplace_back("series", std::to_string(series.size()));
  page.facts.emplace_back("succeeded runs", std::to_string(runs));
  if (!since.empty()) page.facts.emplace_back("changes since", since);
  Table t{{"Series", "Verdict", "Last change", "Metric", "Last value", "Points", "Runs",
           "Last run (UTC)", "Kind", "GPU", "Engine", "Model", "Workload", "Host class"},
          {},
          {}};
  size_t regressed = 0;
  for (const auto& o : series) {
    const auto& s = o.series;
    const auto& k = s.key;
    const store::SeriesHistory* head = o.histories.empty() ? nullptr : &o.histories.front();
    const auto latest = latest_change(o, since);
    std::string verdict = "no change";
    if (latest.change) {
      const bool bad = latest.change->kind == store::ChangeKind::kRegression;
      regressed += bad;
      verdict = bad ? "REGRESSION" : "improvement";
    }
    std::string engine = k.engine + (k.engine_version.empty() ? "" : " " + k.engine_version);
    std::string model = k.model + (k.model_revision.empty() ? "" : "@" + k.model_revision);
    t.rows.push_back({s.id + " " + s.label, verdict,
                      latest.change ? change_text(*latest.history, *latest.change) : "",
                      head ? head->metric : "",
                      head && !head->points.empty() ? format_number(head->points.back().value) : "",
                      head ? std::to_string(head->points.size()) : "0", std::to_string(s.runs),
                      s.last_at.substr(0, 19), std::string(store::to_string(k.kind)), k.gpu_model,
                      engine, model, k.workload, k.host_class});
    t.links.push_back({results_series_page_path(s.id)});
  }
  Section sec{"Series",
              fmt::format("{} series, {} whose latest change is a regression{}. A change is a "
                          "change point (E-divisive means) whose step exceeds the run-to-run "
                          "noise; open a series for its trend charts.",
                          series.size(), regressed,
                          since.empty() ? "" : fmt::format(" (changes from {} on)", since)),
              {},
              {std::move(t)}};
  if (series.empty())
    sec.text = "No succeeded runs in the store" +
               (since.empty() ? std::string() : " from " + since + " on") +
               ". Runs are recorded by analyze, compare, benchmark and tracelens; `magpie results "
               "import DIR` indexes older workspaces.";
  page.sections.push_back(std::move(sec));
  return page;
}

Page results_series_page(const store::SeriesOverview& overview,
                         const std::map<std::string, std::string>& report_links,
                         const std::string& since) {
  const auto& s = overview.series;
  const auto& k = s.key;
  Page page;
  page.kind = "results_series";
  page.title = s.label;
  page.facts.emplace_back("series", s.id);
  page.facts.emplace_back("kind", std::string(store::to_string(k.kind)));
  auto fact = [&](const char* name, const std::string& v) {
    if (!v.empty()) page.facts.emplace_back(name, v);
  };
  fact("config hash", k.config_hash);
  fact("GPU", k.gpu_model);
  fact("engine", k.engine + (k.engine_version.empty() ? "" : " " + k.engine_version));
  fact("model", k.model + (k.model_revision.empty() ? "" : "@" + k.model_revision));
  fact("image", k.image);
  fact("workload", k.workload);
  fact("host class", k.host_class);
  page.facts.emplace_back("runs", fmt::format("{} at {} commits, {} to {}", s.runs, s.commits,
                                              s.first_at.substr(0, 19), s.last_at.substr(0, 19)));
  if (!since.empty()) page.facts.emplace_back("shown", "points from " + since + " on");
  if (overview.histories.empty()) page.warnings.push_back("no metric recorded by any run");

  for (const auto& h : overview.histories) {
    // The points shown: from `since` on (the changes were found on the whole history).
    size_t first = 0;
    while (first < h.points.size() && !since.empty() && h.points[first].date < since) ++first;
    std::vector<TrendPoint> points;
    for (size_t i = first; i < h.points.size(); ++i) {
      const auto& p = h.points[i];
      points.push_back({p.value, p.ci_low, p.ci_high,
                        fmt::format("{} · {} · {} run{} ({})", short_commit(p.commit),
                                    p.date.substr(0, 19), p.run_ids.size(),
                                    p.run_ids.size() == 1 ? "" : "s", run_ids(p)),
                        point_link(p, report_links)});
    }
    std::vector<TrendMark> marks;
    Table changes{{"Kind", "Commit", "Date (UTC)", "Before", "After", "Change", "p"}, {}, {}};
    for (const auto& c : h.changes) {
      if (c.index < first) continue;
      marks.push_back({c.index - first, c.kind == store::ChangeKind::kRegression,
                       change_text(h, c)});
      const auto& p = h.points[c.index];
      changes.rows.push_back({to_string(c.kind), short_commit(p.commit), p.date.substr(0, 19),
                              format_number(c.before), format_number(c.after),
                              percent(c.relative), fmt::format("{:.3f}", c.p_value)});
      changes.links.push_back({"", point_link(p, report_links)});
    }
    Section sec{h.metric,
                fmt::format("{} points ({} is better); {}; {} confirmed change{}.", points.size(),
                            h.higher_better ? "higher" : "lower", noise_text(h.noise),
                            marks.size(), marks.size() == 1 ? "" : "s"),
                {trend_chart(h.metric,
                             "One point per commit (the mean of its runs, with a 95% CI band when "
                             "it has repeats); triangles mark the first point of a new level. "
                             "Click a point for its run's report.",
                             points, marks, h.metric)},
                {}};
    if (!changes.rows.empty()) sec.tables.push_back(std::move(changes));
    page.sections.push_back(std::move(sec));
  }

  // The runs behind the points of the headline metric, each linked to its report.
  if (!overview.histories.empty()) {
    const auto& h = overview.histories.front();
    Table t{{"Point", "Commit", "Date (UTC)", "Runs", h.metric, "95% CI", "Report"}, {}, {}};
    for (size_t i = h.points.size(); i-- > 0;) {
      const auto& p = h.points[i];
      if (!since.empty() && p.date < since) break;
      const std::string link = point_link(p, report_links);
      t.rows.push_back({std::to_string(i + 1), p.commit.empty() ? "(no commit)" : p.commit,
                        p.date.substr(0, 19), run_ids(p), format_number(p.value),
                        p.ci_low ? fmt::format("{} to {}", format_number(*p.ci_low),
                                               format_number(*p.ci_high))
                                 : "",
                        link.empty() ? "" : "report"});
      t.links.push_back({"", "", "", "", "", "", link});
    }
    page.sections.push_back({"Points, newest first",
                             "Each point's runs; a report links to the run's own HTML page when "
                             "its workspace has one.",
                             {},
                             {std::move(t)}});
  }
  return page;
}

}  // namespace magpie::html
