#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/statistics.hpp"
#include "html/charts.hpp"
#include "html/csv_file.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"
#include "store/serving_requests.hpp"

namespace magpie::html {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What benchmark_report.json says about one case of the sweep.
struct ServingCaseSummary {
  std::string label;
  double concurrency = 0;
  std::string request_rate;
  double request_throughput = 0, output_throughput = 0;
  json latency;  // {ttft|tpot|itl|e2el: {mean_ms, p50_ms, p90_ms, p99_ms, ...}}
  json turns;    // sessions: [{turn, completed, failed, mean_input_tokens, ttft: {median_ms, p99_ms, ...}}]
};

// The report file's per-case summaries (or the run's, for a report without cases).
struct ServingReportFile {
  std::string framework, model, timestamp;
  bool success = false;
  std::vector<std::string> errors;
  std::vector<ServingCaseSummary> cases;
  json gpu_monitor;  // the report's gpu_monitor block (null when the run had none)
  json quality_gate;  // the accuracy gate's block (null when the run had none)
  json slo_search;    // --search: its probes and knee (null when the run had none)
};

double number_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string text_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

ServingCaseSummary case_summary(const json& c) {
  ServingCaseSummary s;
  s.label = text_at(c, "label");
  s.concurrency = number_at(c, "concurrency");
  s.request_rate = text_at(c, "request_rate");
  if (auto t = c.find("throughput"); t != c.end() && t->is_object()) {
    s.request_throughput = number_at(*t, "request_throughput");
    s.output_throughput = number_at(*t, "output_throughput");
  }
  if (auto l = c.find("latency"); l != c.end() && l->is_object()) s.latency = *l;
  if (auto t = c.find("turns"); t != c.end() && t->is_array()) s.turns = *t;
  return s;
}

ServingReportFile read_report(const fs::path& workspace) {
  const fs::path path = workspace / "benchmark_report.json";
  ServingReportFile r;
  json j;
  try {
    j = json::parse(read_file(path).view());
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("not a benchmark report: {}", e.what()),
                path.string(), std::nullopt,
                "point --html at a workspace written by `magpie benchmark`");
  }
  r.framework = text_at(j, "framework");
  r.model = text_at(j, "model");
  r.timestamp = text_at(j, "timestamp");
  r.success = j.value("success", false);
  if (auto g = j.find("gpu_monitor"); g != j.end() && g->is_object()) r.gpu_monitor = *g;
  if (auto q = j.find("quality_gate"); q != j.end() && q->is_object()) r.quality_gate = *q;
  if (auto ss = j.find("slo_search"); ss != j.end() && ss->is_object()) r.slo_search = *ss;
  if (auto e = j.find("errors"); e != j.end() && e->is_array())
    for (const auto& x : *e)
      if (x.is_string()) r.errors.push_back(x.get<std::string>());
  if (auto cases = j.find("cases"); cases != j.end() && cases->is_array() && !cases->empty()) {
    for (const auto& c : *cases) r.cases.push_back(case_summary(c));
  } else {
    r.cases.push_back(case_summary(j));  // one case: the run's own throughput and latency blocks
  }
  return r;
}

double tpot_s(const store::ServingRequest& q) {
  int64_t tokens =
      q.output_tokens >= 0 ? q.output_tokens : static_cast<int64_t>(q.itl_s.size()) + 1;
  return tokens > 1 ? (q.e2el_s - q.ttft_s) / static_cast<double>(tokens - 1) : -1.0;
}

std::string case_name(const std::string& label, size_t i) {
  return label.empty() ? fmt::format("case {}", i + 1) : label;
}

constexpr size_t kTimelineRequests = 400;

// --search: request throughput and goodput against the probed rate (or concurrency), the
// knee in the caption, and each probe's verdict in a table.
std::optional<Section> slo_search_section(const json& ss) {
  if (ss.is_null()) return std::nullopt;
  const json probes = ss.value("probes", json::array());
  if (probes.empty()) return std::nullopt;
  std::vector<const json*> sorted;
  for (const auto& p : probes) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const json* a, const json* b) { return number_at(*a, "value") < number_at(*b, "value"); });
  const bool conc = text_at(ss, "variable") == "concurrency";
  const std::string x_axis = conc ? "concurrency" : "offered request rate (req/s)";
  XYSeries thr{"request throughput (req/s)", {}, {}, {}, true};
  XYSeries good{"request goodput (req/s)", {}, {}, {}, true};
  Table t{{conc ? "concurrency" : "rate (req/s)", "verdict", "req/s", "goodput (req/s)", "runs"}, {}};
  for (const json* p : sorted) {
    const double v = number_at(*p, "value");
    const std::string verdict = text_at(*p, "verdict");
    thr.x.push_back(v);
    thr.y.push_back(number_at(*p, "request_throughput"));
    good.x.push_back(v);
    good.y.push_back(number_at(*p, "request_goodput"));
    thr.point_labels.push_back(verdict);
    good.point_labels.push_back(verdict);
    t.rows.push_back({format_number(v), verdict, format_number(number_at(*p, "request_throughput")),
                      format_number(number_at(*p, "request_goodput")),
                      std::to_string(p->value("runs", json::array()).size())});
  }
  Section s{"SLO search: throughput and goodput against the load", text_at(ss, "summary"), {}, {}};
  s.charts.push_back(xy_chart("Request throughput and goodput per probe",
                              "One point per probe (medians over its runs), by the value probed; goodput counts "
                              "the requests within the SLOs.",
                              {thr, good}, x_axis, "req/s"));
  s.tables.push_back(std::move(t));
  return s;
}

// Sessions: TTFT by turn index, one line per case (where prefix caching shows: later turns
// resend the history).
std::optional<Section> turns_section(const std::vector<ServingCaseSummary>& cases) {
  std::vector<XYSeries> median, p99;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].turns.empty()) continue;
    const std::string name = case_name(cases[i].label, i);
    XYSeries a{name, {}, {}, {}, true}, b{name, {}, {}, {}, true};
    for (const auto& t : cases[i].turns) {
      const json ttft = t.value("ttft", json::object());
      a.x.push_back(number_at(t, "turn"));
      a.y.push_back(number_at(ttft, "median_ms"));
      b.x.push_back(number_at(t, "turn"));
      b.y.push_back(number_at(ttft, "p99_ms"));
    }
    median.push_back(std::move(a));
    p99.push_back(std::move(b));
  }
  if (median.empty()) return std::nullopt;
  Section s{"TTFT by turn", "Each turn resends the session's history; with prefix caching, later turns start sooner.",
            {}, {}};
  s.two_columns = true;
  s.charts.push_back(xy_chart("Median TTFT by turn", "One line per case.", median, "turn", "median TTFT (ms)"));
  s.charts.push_back(xy_chart("TTFT p99 by turn", "One line per case.", p99, "turn", "TTFT p99 (ms)"));
  return s;
}

// profiler.gpu_monitor: each field of gpu_monitor.csv (gpu/gpu_monitor.hpp writes it:
// timestamp_s, gpu, then one column per field, empty where the driver gave nothing) over time,
// one line per GPU; the block's min/mean/max as a table.
std::optional<Section> gpu_monitor_section(const json& block, const fs::path& workspace,
                                           std::vector<std::string>& warnings) {
  if (block.is_null()) return std::nullopt;
  if (!block.value("available", false)) {
    warnings.push_back("GPU monitor unavailable: " + text_at(block, "reason"));
    return std::nullopt;
  }
  struct Field {
    const char* column;
    const char* title;
    const char* axis;
  };
  static const Field kFields[] = {{"utilization_pct", "GPU utilization", "utilization (%)"},
                                  {"memory_used_mib", "GPU memory used", "memory used (MiB)"},
                                  {"power_w", "Power draw", "power (W)"},
                                  {"sm_clock_mhz", "SM clock", "SM clock (MHz)"},
                                  {"temperature_c", "GPU temperature", "temperature (°C)"}};
  Section s{"GPU monitor",
            fmt::format("Sampled every {} s while the benchmark ran ({} rounds).",
                        format_number(number_at(block, "interval_sec")),
                        text_at(block, "samples")),
            {},
            {}};
  s.two_columns = true;
  fs::path csv_path = workspace / "gpu_monitor.csv";
  auto csv = read_csv_file(csv_path);
  if (csv) {
    for (const auto& f : kFields) {
      std::map<std::string, XYSeries> by_gpu;
      for (const auto& row : csv->rows) {
        auto t = csv->number(row, "timestamp_s");
        auto v = csv->number(row, f.column);
        if (!t || !v) continue;
        const std::string gpu = "GPU " + csv->text(row, "gpu");
        auto& series = by_gpu.try_emplace(gpu, XYSeries{gpu, {}, {}, {}, true}).first->second;
        series.x.push_back(*t);
        series.y.push_back(*v);
      }
      if (by_gpu.empty()) continue;  // the driver reported this field for no sample
      std::vector<XYSeries> series;
      for (auto& [_, x] : by_gpu) series.push_back(std::move(x));
      auto chart = xy_chart(f.title, "One line per GPU, from gpu_monitor.csv.", series,
                            "time since the monitor started (s)", f.axis);
      chart.height_px = 240;
      s.charts.push_back(std::move(chart));
    }
  } else {
    warnings.push_back(fmt::format("GPU monitor: {} not found; the summary only", csv_path.string()));
  }
  Table t{{"GPU", "name", "field", "min", "mean", "max", "samples"}, {}};
  for (const auto& g : block.value("gpus", json::array())) {
    const json fields = g.value("fields", json::object());  // items() must not outlive it
    for (const auto& [field, r] : fields.items())
      t.rows.push_back({text_at(g, "index"), text_at(g, "name"), field,
                        format_number(number_at(r, "min")), format_number(number_at(r, "mean")),
                        format_number(number_at(r, "max")), text_at(r, "samples")});
  }
  s.tables.push_back(std::move(t));
  for (const auto& n : block.value("notes", json::array()))
    if (n.is_string()) warnings.push_back("GPU monitor: " + n.get<std::string>());
  // The throttle findings over the measuring window, as the report's warnings say them.
  const json throttle = block.value("throttle", json::object());
  for (const auto& w : throttle.value("warnings", json::array()))
    if (w.is_string()) warnings.push_back("GPU monitor: " + w.get<std::string>());
  if (throttle.is_object() && !throttle.empty() && !throttle.value("reasons_reported", true))
    warnings.push_back(
        "GPU monitor: the driver reports no clocks event reasons; throttling was not checked");
  return s;
}

}  // namespace

Page serving_page(const fs::path& workspace) {
  const ServingReportFile report = read_report(workspace);
  std::vector<store::ServingCase> cases;
  std::string records_note;
  try {
    cases = store::load_serving_cases(workspace);
  } catch (const Error& e) {
    records_note = e.what();  // a run that failed before any request still gets its summary page
  }

  Page page;
  page.kind = "serving";
  page.title = fmt::format("Serving benchmark: {} {}", report.framework, report.model);
  page.facts = {{"workspace", workspace.string()},
                {"time", report.timestamp},
                {"success", report.success ? "yes" : "no"},
                {"cases", std::to_string(report.cases.size())}};
  for (const auto& e : report.errors) page.warnings.push_back("error: " + e);
  if (!records_note.empty()) page.warnings.push_back("no per-request records: " + records_note);

  // Summary table and percentile bars from the report file.
  struct Metric {
    const char* key;
    const char* name;
  };
  const Metric metrics[] = {{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"}};
  Section summary{"Summary per case", "", {}, {}};
  summary.tables_first = true;
  summary.two_columns = true;
  Table t{{"case", "concurrency", "request rate", "req/s", "output tok/s"}, {}};
  for (const auto& m : metrics)
    for (const char* p : {"p50", "p90", "p99"})
      t.columns.push_back(fmt::format("{} {} (ms)", m.name, p));
  std::vector<std::string> case_labels;
  for (size_t i = 0; i < report.cases.size(); ++i) {
    const auto& c = report.cases[i];
    case_labels.push_back(case_name(c.label, i));
    std::vector<std::string> row = {case_labels.back(), format_number(c.concurrency),
                                    c.request_rate, format_number(c.request_throughput),
                                    format_number(c.output_throughput)};
    for (const auto& m : metrics)
      for (const char* p : {"p50_ms", "p90_ms", "p99_ms"})
        row.push_back(c.latency.contains(m.key) ? format_number(number_at(c.latency[m.key], p))
                                                : "");
    t.rows.push_back(std::move(row));
  }
  summary.tables.push_back(std::move(t));
  for (const auto& m : metrics) {
    std::vector<Series> pct;
    for (const char* p : {"p50_ms", "p90_ms", "p99_ms"}) {
      Series s{std::string(p).substr(0, 3), {}};
      for (const auto& c : report.cases)
        s.values.push_back(c.latency.contains(m.key) ? number_at(c.latency[m.key], p) : 0.0);
      pct.push_back(std::move(s));
    }
    summary.charts.push_back(bar_chart(fmt::format("{} percentiles per case", m.name), "",
                                       case_labels, pct, fmt::format("{} (ms)", m.name), false));
    summary.charts.back().height_px = 240;
  }
  page.sections.push_back(std::move(summary));
  if (report.quality_gate.is_object()) {  // quality beside speed
    const json& g = report.quality_gate;
    Section q{"Quality gate (lm-eval)",
              fmt::format("Status {}: each task's headline metric on the served model, scored after the timed "
                          "cases. `magpie results diff` pairs two runs' answers item by item.",
                          g.value("status", std::string("?"))),
              {},
              {}};
    Table qt{{"task", "metric", "value", "source"}, {}};
    const json tasks = g.value("tasks", json::object());  // items() must not outlive it
    for (const auto& [task, v] : tasks.items())
      qt.rows.push_back({task, v.value("primary_metric", std::string()), format_number(v.value("value", 0.0)),
                         v.value("source", std::string())});
    q.tables.push_back(std::move(qt));
    page.sections.push_back(std::move(q));
  }

  if (report.cases.size() > 1) {
    Section sweep{"Throughput against latency over the sweep", "", {}, {}};
    sweep.two_columns = true;
    XYSeries e2el{"output tok/s vs median E2EL", {}, {}, {}, true};
    XYSeries tpot{"output tok/s vs median TPOT", {}, {}, {}, true};
    for (size_t i = 0; i < report.cases.size(); ++i) {
      const auto& c = report.cases[i];
      if (c.latency.contains("e2el")) {
        e2el.x.push_back(number_at(c.latency["e2el"], "p50_ms"));
        e2el.y.push_back(c.output_throughput);
        e2el.point_labels.push_back(case_labels[i]);
      }
      if (c.latency.contains("tpot")) {
        tpot.x.push_back(number_at(c.latency["tpot"], "p50_ms"));
        tpot.y.push_back(c.output_throughput);
        tpot.point_labels.push_back(case_labels[i]);
      }
    }
    sweep.charts.push_back(xy_chart("Output throughput against median E2EL",
                                    "One point per case, in sweep order.", {e2el},
                                    "median E2EL (ms)", "output throughput (tok/s)"));
    sweep.charts.push_back(xy_chart("Output throughput against median TPOT",
                                    "One point per case, in sweep order.", {tpot},
                                    "median TPOT (ms)", "output throughput (tok/s)"));
    page.sections.push_back(std::move(sweep));
  }

  if (auto ss = slo_search_section(report.slo_search)) page.sections.push_back(std::move(*ss));
  if (auto tt = turns_section(report.cases)) page.sections.push_back(std::move(*tt));

  if (auto g = gpu_monitor_section(report.gpu_monitor, workspace, page.warnings))
    page.sections.push_back(std::move(*g));

  if (!cases.empty()) {
    Section dist{"Latency distributions (per request)", "", {}, {}};
    dist.two_columns = true;
    std::vector<Series> ttft, tpot, itl, e2el;
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string name = case_name(cases[i].label, i);
      Series a{name, {}}, b{name, {}}, c{name, {}}, d{name, {}};
      for (const auto& q : cases[i].requests) {
        if (!q.success) continue;
        a.values.push_back(q.ttft_s * 1e3);
        if (double v = tpot_s(q); v >= 0) b.values.push_back(v * 1e3);
        for (double x : q.itl_s) c.values.push_back(x * 1e3);
        d.values.push_back(q.e2el_s * 1e3);
      }
      ttft.push_back(std::move(a));
      tpot.push_back(std::move(b));
      itl.push_back(std::move(c));
      e2el.push_back(std::move(d));
    }
    const char* how = "Empirical CDF of successful requests; one curve per case.";
    dist.charts.push_back(ecdf_chart("TTFT: time to first token", how, ttft, "TTFT (ms)"));
    dist.charts.push_back(
        ecdf_chart("TPOT: time per output token after the first", how, tpot, "TPOT (ms)"));
    dist.charts.push_back(ecdf_chart("ITL: gaps between streamed chunks",
                                     "Every gap of every request, pooled.", itl, "ITL (ms)"));
    dist.charts.push_back(ecdf_chart("E2EL: request latency end to end", how, e2el, "E2EL (ms)"));
    page.sections.push_back(std::move(dist));

    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      if (!c.has_timeline || c.requests.empty()) continue;
      std::vector<Span> spans;
      for (size_t k = 0; k < c.requests.size() && k < kTimelineRequests; ++k) {
        const auto& q = c.requests[k];
        spans.push_back({fmt::format("#{}", k), q.start_s, q.start_s + q.ttft_s,
                         q.start_s + q.e2el_s, q.success});
      }
      std::string caption =
          "Each bar is one request from when it was sent: waiting for the first token, "
          "then streaming (red: failed).";
      if (c.requests.size() > kTimelineRequests)
        caption += fmt::format(" First {} of {} requests.", kTimelineRequests, c.requests.size());
      Section s{fmt::format("Request timeline — {}", case_name(c.label, i)), "", {}, {}};
      s.charts.push_back(timeline_chart("Per-request timeline", caption, spans, "to first token",
                                        "streaming", "time since start (s)"));
      page.sections.push_back(std::move(s));
    }
  }
  return page;
}

std::filesystem::path write_page(const Page& page, const std::filesystem::path& path) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  write_file_atomic(path, render_page(page));
  return path;
}

}  // namespace magpie::html
