#include "html/html_page.hpp"

#include <fmt/format.h>

namespace magpie::html {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// JSON inside <script>: "</" would end the element early; "<\/" is the same JSON string.
std::string script_safe_json(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '!')) {
      out += "\\u003c";
    } else {
      out += s[i];
    }
  }
  return out;
}

constexpr std::string_view kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:16px 24px}
header h1{margin:0;font-size:20px}
main{padding:16px 24px;max-width:1280px}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;margin:16px 0}
h2{font-size:17px;margin:4px 0 8px}
h3{font-size:14px;margin:12px 0 4px}
.facts{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:13px}
.facts dt{color:#57606a}.facts dd{margin:0}
.chart{position:relative;margin:8px 0 16px}
.caption{color:#57606a;font-size:12px;margin:2px 0}
table{border-collapse:collapse;font-size:12px;margin:8px 0;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;white-space:nowrap;max-width:520px;overflow:hidden;text-overflow:ellipsis}
th{background:#f6f8fa}
.warnings{color:#9a6700;font-size:13px}
#magpie-errors{color:#cf222e;white-space:pre-wrap}
.grid2{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:4px 24px}
)css";

// Draws every chart of the JSON block, then records what happened:
// canvas[data-rendered], body[data-charts-rendered/-expected], and errors
// (window errors and CSP violations) in #magpie-errors and body[data-errors].
constexpr std::string_view kDriver = R"js(
(function () {
  var body = document.body, errors = document.getElementById('magpie-errors'), count = 0;
  function fail(msg) {
    errors.textContent += msg + '\n';
    body.setAttribute('data-errors', String((+body.getAttribute('data-errors') || 0) + 1));
  }
  window.addEventListener('error', function (e) { fail('error: ' + e.message); });
  document.addEventListener('securitypolicyviolation', function (e) {
    fail('blocked by the page policy: ' + e.blockedURI + ' (' + e.violatedDirective + ')');
  });
  var specs = JSON.parse(document.getElementById('magpie-charts').textContent);
  body.setAttribute('data-charts-expected', String(specs.length));
  body.setAttribute('data-charts-rendered', '0');
  if (typeof Chart === 'undefined') { fail('Chart.js did not load'); return; }
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  var marker = {
    id: 'magpieRendered',
    afterRender: function (chart) {
      var c = chart.canvas;
      if (c.getAttribute('data-rendered') === 'true') return;
      c.setAttribute('data-rendered', 'true');
      body.setAttribute('data-charts-rendered', String(++count));
    }
  };
  specs.forEach(function (s) {
    try {
      var cfg = s.config;
      cfg.plugins = (cfg.plugins || []).concat([marker]);
      // Log axes: label the powers of ten only (Chart.js labels every minor tick).
      var scales = (cfg.options && cfg.options.scales) || {};
      Object.keys(scales).forEach(function (k) {
        if (scales[k].type !== 'logarithmic') return;
        scales[k].ticks = scales[k].ticks || {};
        scales[k].ticks.callback = function (v) {
          var l = Math.log10(v);
          return Math.abs(l - Math.round(l)) < 1e-9 ? String(+Number(v).toPrecision(1)) : '';
        };
      });
      // Points may carry a tooltip title ("label") and a link ("href") of their own.
      var points = [];
      ((cfg.data && cfg.data.datasets) || []).forEach(function (d) {
        (d.data || []).forEach(function (p) { if (p && typeof p === 'object') points.push(p); });
      });
      cfg.options = cfg.options || {};
      if (points.some(function (p) { return p.label; })) {
        var plugins = cfg.options.plugins = cfg.options.plugins || {};
        var tooltip = plugins.tooltip = plugins.tooltip || {};
        tooltip.callbacks = tooltip.callbacks || {};
        tooltip.callbacks.title = function (items) {
          var p = items.length ? items[0].raw : null;
          return p && p.label ? p.label : (items.length ? items[0].label : '');
        };
      }
      if (points.some(function (p) { return p.href; })) {
        cfg.options.onClick = function (event, elements, chart) {
          for (var i = 0; i < elements.length; ++i) {
            var p = chart.data.datasets[elements[i].datasetIndex].data[elements[i].index];
            if (p && p.href) { window.location.href = p.href; return; }
          }
        };
      }
      new Chart(document.getElementById(s.id), cfg);
    } catch (e) { fail('chart ' + s.id + ': ' + e); }
  });
  window.addEventListener('load', function () {
    body.setAttribute('data-resources-loaded',
                      String(performance.getEntriesByType('resource').length));
  });
})();
)js";

}  // namespace

std::string render_page(const Page& page) {
  std::string out;
  out.reserve(chart_js_source().size() + 64 * 1024);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  // Nothing may be fetched: scripts and styles are inline, images data: only.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  out += "<meta name=\"generator\" content=\"magpie\">\n";
  out += fmt::format("<title>{}</title>\n<style>{}</style>\n", escape_html(page.title), kStyle);
  out += fmt::format("<!-- {} inlined: Chart.js, MIT licence (docs/HTML_REPORTS.md) -->\n",
                     escape_html(chart_js_file_name()));
  out += "<script>\n";
  out += chart_js_source();
  out += "\n</script>\n</head>\n";
  out += fmt::format("<body data-report-kind=\"{}\">\n<header><h1>{}</h1></header>\n<main>\n",
                     escape_html(page.kind), escape_html(page.title));
  out += "<pre id=\"magpie-errors\"></pre>\n";
  if (!page.facts.empty() || !page.warnings.empty()) {
    out += "<section><dl class=\"facts\">\n";
    for (const auto& [k, v] : page.facts)
      out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", escape_html(k), escape_html(v));
    out += "</dl>\n";
    for (const auto& w : page.warnings)
      out += fmt::format("<p class=\"warnings\">warning: {}</p>\n", escape_html(w));
    out += "</section>\n";
  }
  nlohmann::json specs = nlohmann::json::array();
  size_t chart_index = 0;
  for (const auto& s : page.sections) {
    out += fmt::format("<section>\n<h2>{}</h2>\n", escape_html(s.heading));
    if (!s.text.empty()) out += fmt::format("<p>{}</p>\n", escape_html(s.text));
    auto tables = [&] {
      for (const auto& t : s.tables) {
        out += "<table><thead><tr>";
        for (const auto& col : t.columns) out += fmt::format("<th>{}</th>", escape_html(col));
        out += "</tr></thead><tbody>\n";
        for (size_t r = 0; r < t.rows.size(); ++r) {
          out += "<tr>";
          for (size_t c = 0; c < t.rows[r].size(); ++c) {
            const std::string cell = escape_html(t.rows[r][c]);
            const std::string* link =
                r < t.links.size() && c < t.links[r].size() && !t.links[r][c].empty()
                    ? &t.links[r][c]
                    : nullptr;
            if (link)
              out += fmt::format("<td title=\"{0}\"><a href=\"{1}\">{0}</a></td>", cell,
                                 escape_html(*link));
            else
              out += fmt::format("<td title=\"{0}\">{0}</td>", cell);
          }
          out += "</tr>\n";
        }
        out += "</tbody></table>\n";
      }
    };
    if (s.tables_first) tables();
    if (s.two_columns) out += "<div class=\"grid2\">\n";
    for (const auto& c : s.charts) {
      std::string id = fmt::format("chart-{}", chart_index++);
      out += "<div>\n";
      out += fmt::format("<h3>{}</h3>\n", escape_html(c.title));
      if (!c.caption.empty())
        out += fmt::format("<p class=\"caption\">{}</p>\n", escape_html(c.caption));
      out += fmt::format(
          "<div class=\"chart\" style=\"height:{}px\"><canvas id=\"{}\" class=\"magpie-chart\" "
          "aria-label=\"{}\"></canvas></div>\n</div>\n",
          c.height_px, id, escape_html(c.title));
      specs.push_back({{"id", id}, {"config", c.config}});
    }
    if (s.two_columns) out += "</div>\n";
    if (!s.tables_first) tables();
    out += "</section>\n";
  }
  out += "</main>\n<script type=\"application/json\" id=\"magpie-charts\">";
  out += script_safe_json(specs);
  out += "</script>\n<script>";
  out += kDriver;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace magpie::html
