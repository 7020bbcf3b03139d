#include "store/series_writers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "report/csv_writer.hpp"
#include "report/text_table.hpp"

namespace magpie::store {

using nlohmann::json;

namespace {

// Below this many points no split has min_size points a side.
constexpr size_t kShortSeries = 2 * stats::ChangePointSettings{}.min_size;

std::string short_commit(const std::string& c) { return c.empty() ? "-" : c.substr(0, 10); }

std::string num(double v) { return fmt::format("{:.6g}", v); }

std::string pct(double rel) { return fmt::format("{:+.1f}%", rel * 100); }

json key_json(const SeriesKey& k) {
  return {{"kind", std::string(to_string(k.kind))},
          {"config_hash", k.config_hash},
          {"gpu_model", k.gpu_model},
          {"engine", k.engine},
          {"engine_version", k.engine_version},
          {"model", k.model},
          {"model_revision", k.model_revision},
          {"image", k.image},
          {"workload", k.workload},
          {"host_class", k.host_class}};
}

json point_json(const SeriesPoint& p) {
  json j{{"commit", p.commit}, {"date", p.date}, {"value", p.value}, {"run_ids", p.run_ids},
         {"workspaces", p.workspaces}};
  j["ci_low"] = p.ci_low ? json(*p.ci_low) : json(nullptr);
  j["ci_high"] = p.ci_high ? json(*p.ci_high) : json(nullptr);
  return j;
}

json noise_json(const NoiseEstimate& n) {
  return {{"cv", n.cv}, {"point_cv", n.point_cv}, {"basis", n.basis},
          {"repeat_runs", n.repeat_runs}};
}

json change_json(const SeriesChange& c) {
  return {{"index", c.index},     {"kind", to_string(c.kind)}, {"before", c.before},
          {"after", c.after},     {"relative_change", c.relative}, {"p_value", c.p_value}};
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string md_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '`' || c == '*' || c == '_' || c == '<' || c == '>') out += '\\';
    out += c;
  }
  return out;
}

std::string describe(const CheckedChange& c) {
  return fmt::format("{} {} {}: {} -> {} ({}) at commit {} ({}), after commit {}; p = {:.3f}, "
                     "noise {:.1f}% a point ({})",
                     c.series_label, c.metric, to_string(c.change.kind), num(c.change.before),
                     num(c.change.after), pct(c.change.relative), short_commit(c.point.commit),
                     c.point.date, short_commit(c.previous.commit), c.change.p_value,
                     c.noise.point_cv * 100, c.noise.basis);
}

}  // namespace

json to_json(const SeriesSummary& s) {
  return {{"id", s.id},           {"label", s.label},       {"key", key_json(s.key)},
          {"runs", s.runs},       {"commits", s.commits},   {"first_at", s.first_at},
          {"last_at", s.last_at}, {"metrics", s.metrics}};
}

json to_json(const SeriesHistory& h) {
  json points = json::array(), changes = json::array();
  for (const auto& p : h.points) points.push_back(point_json(p));
  for (const auto& c : h.changes) {
    auto j = change_json(c);
    j["commit"] = h.points[c.index].commit;
    j["date"] = h.points[c.index].date;
    changes.push_back(std::move(j));
  }
  return {{"series", to_json(h.series)},
          {"metric", h.metric},
          {"higher_is_better", h.higher_better},
          {"noise", noise_json(h.noise)},
          {"points", points},
          {"changes", changes}};
}

json to_json(const CheckResult& r) {
  json checked = json::array(), changes = json::array();
  for (const auto& c : r.checked)
    checked.push_back({{"series", c.series.id},
                       {"label", c.series.label},
                       {"metric", c.metric},
                       {"points", c.points},
                       {"latest", c.latest ? point_json(*c.latest) : json(nullptr)},
                       {"noise", noise_json(c.noise)},
                       {"regressed", c.regressed}});
  for (const auto& c : r.changes) {
    auto j = change_json(c.change);
    j["series"] = c.series_id;
    j["label"] = c.series_label;
    j["metric"] = c.metric;
    j["higher_is_better"] = c.higher_better;
    j["point"] = point_json(c.point);
    j["previous"] = point_json(c.previous);
    j["noise"] = noise_json(c.noise);
    changes.push_back(std::move(j));
  }
  return {{"since", r.since},
          {"regression", r.regression()},
          {"checked", checked},
          {"changes", changes}};
}

std::string series_text(const std::vector<SeriesSummary>& series) {
  if (series.empty()) return "no succeeded runs in the results store: no series\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : series)
    rows.push_back({s.id, s.label, std::to_string(s.runs), std::to_string(s.commits),
                    s.last_at.substr(0, 19)});
  return report::render_text_table(
      {{"Series"}, {"What", false, 90}, {"Runs", true}, {"Commits", true}, {"Last run (UTC)"}},
      rows);
}

std::string history_text(const SeriesHistory& h) {
  std::string out = fmt::format(
      "series {}: {}\nmetric {} ({} is better); run-to-run noise {:.2f}% a run, {:.2f}% a point "
      "({})\n",
      h.series.id, h.series.label, h.metric, h.higher_better ? "higher" : "lower",
      h.noise.cv * 100, h.noise.point_cv * 100, h.noise.basis.empty() ? "unknown" : h.noise.basis);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < h.points.size(); ++i) {
    const auto& p = h.points[i];
    std::string mark;
    for (const auto& c : h.changes)
      if (c.index == i) mark = fmt::format("{} {}", to_string(c.kind), pct(c.relative));
    std::string ids;
    for (auto id : p.run_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    rows.push_back({short_commit(p.commit), p.date.substr(0, 19), num(p.value),
                    p.ci_low ? fmt::format("[{}, {}]", num(*p.ci_low), num(*p.ci_high)) : "-",
                    ids, mark});
  }
  return out + report::render_text_table({{"Commit"},
                                          {"Date (UTC)"},
                                          {"Value", true},
                                          {"95% CI"},
                                          {"Runs", false, 24},
                                          {"Change"}},
                                         rows);
}

std::string check_text(const CheckResult& r) {
  size_t regressions = 0;
  for (const auto& c : r.changes) regressions += c.change.kind == ChangeKind::kRegression;
  std::string out = fmt::format(
      "checked {} series/metric pair{}{}: {} regression{}, {} improvement{}\n", r.checked.size(),
      r.checked.size() == 1 ? "" : "s", r.since.empty() ? "" : " since " + r.since, regressions,
      regressions == 1 ? "" : "s", r.changes.size() - regressions,
      r.changes.size() - regressions == 1 ? "" : "s");
  size_t short_series = 0;
  for (const auto& c : r.checked) short_series += c.points < kShortSeries;
  if (short_series)
    out += fmt::format(
        "{} of them ha{} fewer than {} points: too short to confirm a change (3 points a side, "
        "about 5 for a significant step)\n",
        short_series, short_series == 1 ? "s" : "ve", kShortSeries);
  if (r.changes.empty()) return out;
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : r.changes)
    rows.push_back({c.change.kind == ChangeKind::kRegression ? "REGRESSION" : "improvement",
                    c.series_id, c.metric, short_commit(c.point.commit), c.point.date.substr(0, 19),
                    num(c.change.before), num(c.change.after), pct(c.change.relative),
                    fmt::format("{:.3f}", c.change.p_value)});
  return out + report::render_text_table({{"Change"},
                                          {"Series"},
                                          {"Metric"},
                                          {"Commit"},
                                          {"Date (UTC)"},
                                          {"Before", true},
                                          {"After", true},
                                          {"Δ", true},
                                          {"p", true}},
                                         rows);
}

std::string check_junit(const CheckResult& r) {
  size_t failures = 0;
  for (const auto& c : r.checked) failures += c.regressed;
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"magpie results check\" tests=\"{0}\" failures=\"{1}\">\n"
      "  <testsuite name=\"magpie results check\" tests=\"{0}\" failures=\"{1}\" errors=\"0\">\n",
      r.checked.size(), failures);
  for (const auto& c : r.checked) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n",
                       xml_escape(c.series.id + " " + c.series.label), xml_escape(c.metric));
    std::string failed, passed;
    for (const auto& ch : r.changes) {
      if (ch.series_id != c.series.id || ch.metric != c.metric) continue;
      (ch.change.kind == ChangeKind::kRegression ? failed : passed) += describe(ch) + "\n";
    }
    if (!failed.empty())
      out += fmt::format("      <failure message=\"{}\" type=\"regression\">{}</failure>\n",
                         xml_escape(failed.substr(0, failed.find('\n'))), xml_escape(failed));
    std::string notes = passed;
    if (c.latest)
      notes += fmt::format("latest: {} at commit {} ({}), {} points, run-to-run noise {:.2f}%\n",
                           num(c.latest->value), short_commit(c.latest->commit), c.latest->date,
                           c.points, c.noise.cv * 100);
    out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(notes));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string check_github_summary(const CheckResult& r) {
  size_t regressions = 0;
  for (const auto& c : r.changes) regressions += c.change.kind == ChangeKind::kRegression;
  std::string out = "## Magpie: performance over time\n\n";
  out += regressions ? fmt::format(":x: **{} regression{}**", regressions, regressions == 1 ? "" : "s")
                     : std::string(":white_check_mark: **no regression**");
  out += fmt::format(" in {} series/metric pair{}{}.\n\n", r.checked.size(),
                     r.checked.size() == 1 ? "" : "s",
                     r.since.empty() ? "" : " since " + r.since);
  if (!r.changes.empty()) {
    out += "| | series | metric | commit | before | after | change | p |\n"
           "|---|---|---|---|---:|---:|---:|---:|\n";
    for (const auto& c : r.changes)
      out += fmt::format("| {} | `{}` {} | {} | `{}` | {} | {} | {} | {:.3f} |\n",
                         c.change.kind == ChangeKind::kRegression ? ":x: regression"
                                                                  : ":rocket: improvement",
                         c.series_id, md_escape(c.series_label), md_escape(c.metric),
                         short_commit(c.point.commit), num(c.change.before), num(c.change.after),
                         pct(c.change.relative), c.change.p_value);
    out += "\n";
  }
  out += "Change points: E-divisive means with a permutation test, confirmed only beyond the "
         "run-to-run noise (docs/RESULTS.md).\n";
  return out;
}

std::string check_bmf(const CheckResult& r) {
  json out = json::object();
  for (const auto& c : r.checked) {
    if (!c.latest) continue;
    json m{{"value", c.latest->value}};
    if (c.latest->ci_low) {
      m["lower_value"] = *c.latest->ci_low;
      m["upper_value"] = *c.latest->ci_high;
    }
    out[fmt::format("{} [{}]", c.series.label, c.series.id)][c.metric] = m;
  }
  return out.dump(2) + "\n";
}

std::string check_csv(const CheckResult& r) {
  std::string out =
      "series,label,metric,kind,commit,date,previous_commit,before,after,relative_change,p_value,"
      "noise_cv,point_noise_cv,noise_basis,run_ids\n";
  for (const auto& c : r.changes) {
    std::string ids;
    for (auto id : c.point.run_ids) ids += (ids.empty() ? "" : " ") + std::to_string(id);
    out += fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{:.4f},{:.6f},{:.6f},{},{}\n", c.series_id,
                       report::csv_escape(c.series_label), report::csv_escape(c.metric),
                       to_string(c.change.kind), c.point.commit, c.point.date, c.previous.commit,
                       num(c.change.before), num(c.change.after), c.change.relative,
                       c.change.p_value, c.noise.cv, c.noise.point_cv, c.noise.basis, ids);
  }
  return out;
}

}  // namespace magpie::store
