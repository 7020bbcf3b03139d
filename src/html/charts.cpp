#include "html/charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace magpie::html {

using nlohmann::json;

std::string palette(size_t i, double alpha) {
  // Tableau 10: distinct at a glance and for most colour-blind readers.
  static const int rgb[][3] = {{78, 121, 167}, {242, 142, 43}, {225, 87, 89},   {118, 183, 178},
                               {89, 161, 79},  {237, 201, 72}, {176, 122, 161}, {255, 157, 167},
                               {156, 117, 95}, {186, 176, 172}};
  const auto& c = rgb[i % 10];
  return fmt::format("rgba({},{},{},{})", c[0], c[1], c[2], alpha);
}

std::string verdict_colour(const std::string& verdict) {
  if (verdict == "FASTER") return "rgba(26,127,55,0.75)";
  if (verdict == "SLOWER") return "rgba(207,34,46,0.75)";
  if (verdict == "SAME") return "rgba(87,96,106,0.6)";
  return "rgba(154,103,0,0.6)";  // AMBIGUOUS / unknown
}

namespace {

json axis(const std::string& title, bool log = false) {
  json a = {{"title", {{"display", !title.empty()}, {"text", title}}}};
  if (log) a["type"] = "logarithmic";
  return a;
}

// Finite values only: JSON has no NaN/inf and Chart.js would skip them anyway.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

Chart make(std::string title, std::string caption, json config, int height = 320) {
  Chart c;
  c.title = std::move(title);
  c.caption = std::move(caption);
  c.config = std::move(config);
  c.height_px = height;
  return c;
}

}  // namespace

Chart bar_chart(std::string title, std::string caption, const std::vector<std::string>& labels,
                const std::vector<Series>& series, std::string value_axis, bool horizontal,
                bool stacked) {
  json datasets = json::array();
  for (size_t i = 0; i < series.size(); ++i) {
    json data = json::array();
    for (double v : series[i].values) data.push_back(num(v));
    datasets.push_back({{"label", series[i].label},
                        {"data", data},
                        {"backgroundColor", palette(i, 0.8)},
                        {"borderColor", palette(i)},
                        {"borderWidth", 1}});
  }
  json value = axis(value_axis);
  json category = {{"ticks", {{"autoSkip", false}}}};
  if (stacked) {
    value["stacked"] = true;
    category["stacked"] = true;
  }
  json config = {
      {"type", "bar"},
      {"data", {{"labels", labels}, {"datasets", datasets}}},
      {"options",
       {{"indexAxis", horizontal ? "y" : "x"},
        {"plugins", {{"legend", {{"display", series.size() > 1}}}}},
        {"scales", {{horizontal ? "x" : "y", value}, {horizontal ? "y" : "x", category}}}}}};
  int height = horizontal ? std::clamp(60 + 22 * static_cast<int>(labels.size()), 160, 900) : 320;
  return make(std::move(title), std::move(caption), std::move(config), height);
}

Chart ecdf_chart(std::string title, std::string caption, const std::vector<Series>& samples,
                 std::string value_axis, bool log_x) {
  std::vector<XYSeries> lines;
  for (const auto& s : samples) {
    std::vector<double> v;
    for (double x : s.values)
      if (std::isfinite(x) && (!log_x || x > 0)) v.push_back(x);
    std::sort(v.begin(), v.end());
    // At most ~400 points per curve: quantiles of the sorted samples.
    const size_t n = v.size();
    const size_t step = std::max<size_t>(1, n / 400);
    XYSeries line{s.label, {}, {}, {}, true};
    for (size_t i = 0; i < n; i += step) {
      line.x.push_back(v[i]);
      line.y.push_back(100.0 * static_cast<double>(i + 1) / static_cast<double>(n));
    }
    if (n && line.y.back() < 100.0) {
      line.x.push_back(v.back());
      line.y.push_back(100.0);
    }
    lines.push_back(std::move(line));
  }
  Chart c = xy_chart(std::move(title), std::move(caption), lines, std::move(value_axis),
                     "% of samples at or below", log_x, false);
  c.config["options"]["scales"]["y"]["min"] = 0;
  c.config["options"]["scales"]["y"]["max"] = 100;
  for (auto& d : c.config["data"]["datasets"]) {
    d["stepped"] = true;
    d["pointRadius"] = 0;
  }
  return c;
}

Chart xy_chart(std::string title, std::string caption, const std::vector<XYSeries>& series,
               std::string x_axis, std::string y_axis, bool log_x, bool log_y) {
  json datasets = json::array();
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    json data = json::array();
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      if (!std::isfinite(s.x[k]) || !std::isfinite(s.y[k])) continue;
      if ((log_x && s.x[k] <= 0) || (log_y && s.y[k] <= 0)) continue;
      json p = {{"x", s.x[k]}, {"y", s.y[k]}};
      if (k < s.point_labels.size()) p["label"] = s.point_labels[k];
      if (k < s.point_links.size() && !s.point_links[k].empty()) p["href"] = s.point_links[k];
      data.push_back(p);
    }
    datasets.push_back({{"label", s.label},
                        {"data", data},
                        {"showLine", s.line},
                        {"borderColor", palette(i)},
                        {"backgroundColor", palette(i, 0.6)},
                        {"pointRadius", s.line ? 2 : 4}});
  }
  json config = {{"type", "scatter"},
                 {"data", {{"datasets", datasets}}},
                 {"options",
                  {{"parsing", true},
                   {"plugins", {{"legend", {{"display", true}}}}},
                   {"scales", {{"x", axis(x_axis, log_x)}, {"y", axis(y_axis, log_y)}}}}}};
  return make(std::move(title), std::move(caption), std::move(config), 360);
}

Chart trend_chart(std::string title, std::string caption, const std::vector<TrendPoint>& points,
                  const std::vector<TrendMark>& marks, std::string value_axis) {
  XYSeries low{"95% CI (low)", {}, {}, {}, true}, high{"95% CI (high)", {}, {}, {}, true},
      value{"value", {}, {}, {}, true}, regressions{"regression", {}, {}, {}, false},
      improvements{"improvement", {}, {}, {}, false};
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const double x = static_cast<double>(i);
    value.x.push_back(x);
    value.y.push_back(p.value);
    value.point_labels.push_back(p.label);
    value.point_links.push_back(p.link);
    if (p.low && p.high) {
      low.x.push_back(x);
      low.y.push_back(*p.low);
      high.x.push_back(x);
      high.y.push_back(*p.high);
    }
  }
  for (const auto& m : marks) {
    if (m.index >= points.size()) continue;
    auto& s = m.regression ? regressions : improvements;
    s.x.push_back(static_cast<double>(m.index));
    s.y.push_back(points[m.index].value);
    s.point_labels.push_back(m.label);
    s.point_links.push_back(points[m.index].link);
  }
  Chart c = xy_chart(std::move(title), std::move(caption),
                     {low, high, value, regressions, improvements}, "point (oldest first)",
                     std::move(value_axis));
  auto d = c.config["data"]["datasets"];
  // The band: the high line filled down to the low one, neither drawn as points.
  for (size_t i : {0, 1}) {
    d[i]["pointRadius"] = 0;
    d[i]["borderWidth"] = 0;
    d[i]["backgroundColor"] = palette(0, 0.18);
  }
  d[1]["fill"] = "-1";
  d[2]["borderColor"] = palette(0);
  d[2]["backgroundColor"] = palette(0);
  d[2]["pointRadius"] = points.size() > 200 ? 1 : 3;
  d[3]["borderColor"] = d[3]["backgroundColor"] = verdict_colour("SLOWER");
  d[4]["borderColor"] = d[4]["backgroundColor"] = verdict_colour("FASTER");
  for (size_t i : {3, 4}) {
    d[i]["pointRadius"] = 8;
    d[i]["pointStyle"] = "triangle";
  }
  // Only what the series has: no band without CIs, no empty kind of marker.
  nlohmann::json kept = nlohmann::json::array();
  for (size_t i = 0; i < d.size(); ++i)
    if (i == 2 || !d[i]["data"].empty()) kept.push_back(d[i]);
  c.config["data"]["datasets"] = kept;
  return c;
}

Chart interval_chart(std::string title, std::string caption, const std::vector<IntervalRow>& rows,
                     std::string value_axis, double reference) {
  json labels = json::array(), ranges = json::array(), points = json::array(),
       colours = json::array(), reference_line = json::array();
  for (const auto& r : rows) {
    std::string label = r.verdict.empty() ? r.label : fmt::format("{} ({})", r.label, r.verdict);
    labels.push_back(label);
    ranges.push_back(json::array({num(r.low), num(r.high)}));
    points.push_back(num(r.estimate));
    colours.push_back(verdict_colour(r.verdict));
    reference_line.push_back(reference);
  }
  json datasets = json::array({{{"type", "line"},
                                {"label", "estimate"},
                                {"data", points},
                                {"showLine", false},
                                {"pointRadius", 5},
                                {"pointStyle", "rectRot"},
                                {"borderColor", "#1f2328"},
                                {"backgroundColor", "#1f2328"}},
                               {{"type", "bar"},
                                {"label", "confidence interval"},
                                {"data", ranges},
                                {"backgroundColor", colours},
                                {"barPercentage", 0.5}},
                               {{"type", "line"},
                                {"label", fmt::format("no change ({})", reference)},
                                {"data", reference_line},
                                {"pointRadius", 0},
                                {"borderDash", {4, 4}},
                                {"borderColor", "#57606a"}}});
  json config = {
      {"type", "bar"},
      {"data", {{"labels", labels}, {"datasets", datasets}}},
      {"options",
       {{"indexAxis", "y"},
        {"plugins", {{"legend", {{"display", true}}}}},
        {"scales", {{"x", axis(value_axis)}, {"y", {{"ticks", {{"autoSkip", false}}}}}}}}}};
  int height = std::clamp(80 + 28 * static_cast<int>(rows.size()), 180, 900);
  return make(std::move(title), std::move(caption), std::move(config), height);
}

Chart timeline_chart(std::string title, std::string caption, const std::vector<Span>& spans,
                     std::string first_part, std::string rest_part, std::string time_axis) {
  json labels = json::array(), first = json::array(), rest = json::array(),
       rest_colours = json::array();
  for (const auto& s : spans) {
    labels.push_back(s.label);
    first.push_back(json::array({num(s.start), num(s.first_end)}));
    rest.push_back(json::array({num(s.first_end), num(s.end)}));
    rest_colours.push_back(s.ok ? palette(0, 0.7) : "rgba(207,34,46,0.7)");
  }
  json datasets = json::array({{{"label", first_part},
                                {"data", first},
                                {"backgroundColor", palette(1, 0.8)},
                                {"grouped", false},
                                {"barPercentage", 1.0},
                                {"categoryPercentage", 0.9}},
                               {{"label", rest_part},
                                {"data", rest},
                                {"backgroundColor", rest_colours},
                                {"grouped", false},
                                {"barPercentage", 1.0},
                                {"categoryPercentage", 0.9}}});
  json config = {
      {"type", "bar"},
      {"data", {{"labels", labels}, {"datasets", datasets}}},
      {"options",
       {{"indexAxis", "y"},
        {"plugins", {{"legend", {{"display", true}}}}},
        {"scales", {{"x", axis(time_axis)}, {"y", {{"ticks", {{"autoSkip", true}}}}}}}}}};
  int height = std::clamp(80 + 6 * static_cast<int>(spans.size()), 200, 900);
  return make(std::move(title), std::move(caption), std::move(config), height);
}

}  // namespace magpie::html
