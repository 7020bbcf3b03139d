#pragma once
// A report page: a title, key facts, and sections of charts and tables,
// rendered into one self-contained HTML file. Chart.js is inlined, a
// Content-Security-Policy forbids every network request, and the page's
// script records in the DOM which charts were drawn and any JavaScript error
// (docs/HTML_REPORTS.md: what the headless-Chromium test checks). A chart
// point with an "href" opens that (relative) link when clicked; one with a
// "label" shows it as its tooltip's title.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace magpie::html {

// One Chart.js chart: `config` is Chart.js's {type, data, options}.
struct Chart {
  std::string title;
  std::string caption;  // one sentence: how to read it
  nlohmann::json config;
  int height_px = 320;
};

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  // Optional, shaped like rows: a relative link per cell ("" = plain text).
  std::vector<std::vector<std::string>> links;
};

struct Section {
  std::string heading;
  std::string text;  // plain text (escaped)
  std::vector<Chart> charts;
  std::vector<Table> tables;
  bool tables_first = false;  // the table is the summary, the charts the detail
  bool two_columns = false;   // small charts side by side
};

struct Page {
  std::string kind;  // gap_analysis, tracelens, analyze, compare, results_diff, serving
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;  // label → value
  std::vector<std::string> warnings;
  std::vector<Section> sections;
};

std::string render_page(const Page& page);

std::string escape_html(std::string_view text);

// The Chart.js bundle compiled in (generated from Debian's libjs-chart.js).
std::string_view chart_js_source();
std::string_view chart_js_file_name();

}  // namespace magpie::html
