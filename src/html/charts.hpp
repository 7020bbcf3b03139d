#pragma once
// Chart.js configurations for the kinds of plot the reports use. Each builder
// returns a Chart whose config is plain JSON (no JavaScript callbacks), so a
// report is data plus the page's one fixed script.
#include <optional>
#include <string>
#include <vector>

#include "html/html_page.hpp"

namespace magpie::html {

struct Series {
  std::string label;
  std::vector<double> values;
};

struct XYSeries {
  std::string label;
  std::vector<double> x, y;
  std::vector<std::string> point_labels;  // optional, shown in the tooltip title
  bool line = false;                      // connect the points
  std::vector<std::string> point_links;   // optional, a relative link opened on click
};

// A confidence interval per row: estimate and [low, high], and its verdict.
struct IntervalRow {
  std::string label;
  double estimate = 0, low = 0, high = 0;
  std::string verdict;  // FASTER / SLOWER / SAME / AMBIGUOUS colour the bar
};

// Horizontal bars, one row per label (top-N breakdowns); several series stack.
Chart bar_chart(std::string title, std::string caption, const std::vector<std::string>& labels,
                const std::vector<Series>& series, std::string value_axis, bool horizontal = true,
                bool stacked = false);

// Empirical CDFs: one line per series of raw samples (sorted here).
Chart ecdf_chart(std::string title, std::string caption, const std::vector<Series>& samples,
                 std::string value_axis, bool log_x = false);

// Scatter / lines over numeric axes.
Chart xy_chart(std::string title, std::string caption, const std::vector<XYSeries>& series,
               std::string x_axis, std::string y_axis, bool log_x = false, bool log_y = false);

// One metric along a series (results site): the points as a line with their
// CI band, and markers at the first point of each new level, red where it is
// a regression and green where an improvement. x is the point's index.
struct TrendPoint {
  double value = 0;
  std::optional<double> low, high;  // its CI, when it has one
  std::string label;                // tooltip title: commit, date, runs
  std::string link;                 // "" = none
};
struct TrendMark {
  size_t index = 0;  // into the points
  bool regression = false;
  std::string label;
};
Chart trend_chart(std::string title, std::string caption, const std::vector<TrendPoint>& points,
                  const std::vector<TrendMark>& marks, std::string value_axis);

// Intervals as floating horizontal bars with the estimate as a point, and a
// reference line (1.0 for ratios, 0 for deltas).
Chart interval_chart(std::string title, std::string caption, const std::vector<IntervalRow>& rows,
                     std::string value_axis, double reference);

// Per-item spans [start, end] as floating horizontal bars, with an optional
// first part (e.g. time to first token) drawn over it.
struct Span {
  std::string label;
  double start = 0, first_end = 0, end = 0;
  bool ok = true;
};
Chart timeline_chart(std::string title, std::string caption, const std::vector<Span>& spans,
                     std::string first_part, std::string rest_part, std::string time_axis);

// A colour per series index, and per verdict.
std::string palette(size_t i, double alpha = 1.0);
std::string verdict_colour(const std::string& verdict);

}  // namespace magpie::html
