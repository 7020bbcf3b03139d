#include "jobs/critical_path_jobs.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "report/csv_writer.hpp"
#include "report/text_table.hpp"
#include "analysis/critical_path_ranks.hpp"
#include "trace/trace_loader.hpp"
#include "trace/trace_links.hpp"

namespace magpie::jobs {

using analysis::kPathCategories;
using analysis::PathCategory;

namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}
double round3(double v) { return std::round(v * 1e3) / 1e3; }

// Sums of the iterations' paths (the whole window when there are none).
std::array<int64_t, kPathCategories> iteration_totals(const analysis::CriticalPathReport& r, int64_t& length) {
  std::array<int64_t, kPathCategories> total{};
  length = 0;
  for (size_t i = r.paths.size() > 1 ? 1 : 0; i < r.paths.size(); ++i) {
    length += r.paths[i].length_ns();
    for (size_t c = 0; c < kPathCategories; ++c) total[c] += r.paths[i].by_category[c];
  }
  return total;
}

// Of the iterations' collective time (the whole window's without iterations): waiting for the last rank.
int64_t collective_wait(const analysis::CriticalPathReport& r) {
  int64_t total = 0;
  for (size_t i = r.paths.size() > 1 ? 1 : 0; i < r.paths.size(); ++i) total += r.paths[i].collective_wait_ns;
  return total;
}

nlohmann::json breakdown_json(const std::array<int64_t, kPathCategories>& by, int64_t length) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t c = 0; c < kPathCategories; ++c) {
    j[analysis::to_string(static_cast<PathCategory>(c))] = {{"us", round3(us(by[c]))},
                                                             {"pct", round3(pct(by[c], length))}};
  }
  return j;
}

nlohmann::json shares_json(const std::vector<analysis::NameShare>& v, int64_t path_len, int64_t gpu_total,
                           size_t limit) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < v.size() && i < limit; ++i) {
    a.push_back({{"name", v[i].name},
                 {"path_us", round3(us(v[i].path_ns))},
                 {"path_pct", round3(pct(v[i].path_ns, path_len))},
                 {"path_gpu_us", round3(us(v[i].path_gpu_ns))},
                 {"kernel_us", round3(us(v[i].kernel_ns))},
                 {"kernel_pct", round3(pct(v[i].kernel_ns, gpu_total))},
                 {"gpu_events", v[i].calls}});
  }
  return a;
}

int64_t gpu_total(const analysis::CriticalPathReport& r) {
  int64_t t = 0;
  for (const auto& k : r.kernels) t += k.kernel_ns;
  return t;
}

nlohmann::json whatif_json(const analysis::WhatIfResult& w) {
  const bool steps = !w.iterations.empty();
  const int64_t before = steps ? w.iterations_before_ns : w.whole.before_ns;
  nlohmann::json per_step = nlohmann::json::array();
  for (const auto& c : w.iterations)
    per_step.push_back({{"window", c.label}, {"before_us", round3(us(c.before_ns))}, {"after_us", round3(us(c.after_ns))}});
  return {{"scenario", w.scenario.text},
          {"matched", w.matched},
          {"basis", steps ? "iterations" : "whole trace"},
          {"before_us", round3(us(before))},
          {"after_us", round3(us(before - w.gain_ns()))},
          {"gain_us", round3(us(w.gain_ns()))},
          {"gain_pct", round3(pct(w.gain_ns(), before))},
          {"median_step_before_us", round3(w.median_step_before_us)},
          {"median_step_after_us", round3(w.median_step_after_us)},
          {"whole_before_us", round3(us(w.whole.before_ns))},
          {"whole_after_us", round3(us(w.whole.after_ns))},
          {"steps", per_step},
          {"warnings", w.warnings}};
}

void write_outputs(const WhatIfOutcome& out, const std::filesystem::path& dir,
                   std::vector<std::filesystem::path>& files) {
  std::filesystem::create_directories(dir);
  auto put = [&](const std::string& name, const std::string& text) {
    write_file_atomic(dir / name, text);
    files.push_back(dir / name);
  };
  put("critical_path.json", report_json(out).dump(2) + "\n");
  report::CsvWriter paths, ops, whatif;
  std::vector<std::string> head{"rank", "window", "stage", "start_us", "length_us"};
  for (size_t c = 0; c < kPathCategories; ++c) {
    head.push_back(std::string(analysis::to_string(static_cast<PathCategory>(c))) + "_us");
    head.push_back(std::string(analysis::to_string(static_cast<PathCategory>(c))) + "_pct");
  }
  paths.row(head);
  ops.row({"rank", "op", "path_us", "path_pct", "path_gpu_us", "kernel_us", "kernel_pct", "gpu_events",
           "gpu_gain_bound_us", "host_gain_bound_us"});
  whatif.row({"rank", "scenario", "matched", "basis", "before_us", "after_us", "gain_us", "gain_pct",
              "median_step_before_us", "median_step_after_us"});
  for (const auto& rank : out.ranks) {
    const auto& r = rank.report;
    const std::string rk = std::to_string(r.rank);
    for (const auto& p : r.paths) {
      std::vector<std::string> row{rk, p.label, p.stage, report::fixed(us(p.start_ns), 3),
                                   report::fixed(us(p.length_ns()), 3)};
      for (size_t c = 0; c < kPathCategories; ++c) {
        row.push_back(report::fixed(us(p.by_category[c]), 3));
        row.push_back(report::fixed(pct(p.by_category[c], p.length_ns()), 2));
      }
      paths.row(row);
    }
    const int64_t len = r.paths.empty() ? 0 : r.paths[0].length_ns();
    const int64_t gpu = gpu_total(r);
    for (const auto& o : r.ops) {
      std::string gb, hb;
      for (const auto& b : rank.bounds) {
        if (b.name != o.name) continue;
        if (b.gpu_gain_ns) gb = report::fixed(us(b.gpu_gain_ns), 3);
        if (b.host_gain_ns) hb = report::fixed(us(b.host_gain_ns), 3);
      }
      ops.row({rk, o.name, report::fixed(us(o.path_ns), 3), report::fixed(pct(o.path_ns, len), 2),
               report::fixed(us(o.path_gpu_ns), 3), report::fixed(us(o.kernel_ns), 3),
               report::fixed(pct(o.kernel_ns, gpu), 2), std::to_string(o.calls), gb, hb});
    }
    for (const auto& w : rank.results) {
      const nlohmann::json j = whatif_json(w);
      whatif.row({rk, w.scenario.text, std::to_string(w.matched), j["basis"].get<std::string>(),
                  report::fixed(j["before_us"].get<double>(), 3), report::fixed(j["after_us"].get<double>(), 3),
                  report::fixed(j["gain_us"].get<double>(), 3), report::fixed(j["gain_pct"].get<double>(), 2),
                  report::fixed(w.median_step_before_us, 3), report::fixed(w.median_step_after_us, 3)});
    }
  }
  put("critical_path.csv", paths.str());
  put("critical_path_ops.csv", ops.str());
  put("whatif.csv", whatif.str());
}

bool has_gpu_work(const RankWhatIf& rank) { return rank.report.graph.gpu_nodes > 0; }

}  // namespace

WhatIfOutcome run_whatif(const WhatIfRequest& request, const JobContext& context) {
  std::vector<analysis::Scenario> scenarios;
  for (const auto& s : request.scenarios) scenarios.push_back(analysis::parse_scenario(s));
  WhatIfOutcome out;
  auto t0 = std::chrono::steady_clock::now();
  context.report(0, 3, fmt::format("reading {}", request.trace_path.string()));
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(request.trace_path)) {
    files = trace::discover_trace_files(request.trace_path);
    if (files.empty())
      throw Error(ErrorKind::kNotFound, fmt::format("no trace files in {}", request.trace_path.string()),
                  request.trace_path.string(), std::nullopt, "give a .json/.json.gz trace or a folder of them");
  } else {
    files.push_back(request.trace_path);
  }
  files.insert(files.end(), request.other_ranks.begin(), request.other_ranks.end());
  std::vector<trace::Trace> traces;
  for (const auto& f : files) {
    auto ranks = trace::load_trace_ranks(f, request.ingest);
    for (auto& t : ranks) traces.push_back(std::move(t));
  }
  auto t1 = std::chrono::steady_clock::now();
  out.ingest_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (context.cancelled()) throw Error(ErrorKind::kCancelled, "whatif cancelled");
  context.report(1, 3, "building the dependency graph");
  std::vector<analysis::DependencyGraph> graphs;
  graphs.reserve(traces.size());
  for (auto& t : traces) graphs.push_back(analysis::build_dependency_graph(t, trace::links_of(t)));
  if (traces.size() > 1) {
    std::vector<const trace::Trace*> tp;
    std::vector<analysis::DependencyGraph*> gp;
    for (size_t i = 0; i < traces.size(); ++i) tp.push_back(&traces[i]), gp.push_back(&graphs[i]);
    auto linked = analysis::link_ranks(tp, gp);
    out.cross_rank_matched = linked.matched_calls;
    out.warnings = std::move(linked.warnings);
  }
  for (size_t i = 0; i < traces.size(); ++i) {
    auto& t = traces[i];
    analysis::DependencyGraph& g = graphs[i];
    const trace::TraceLinks& links = trace::links_of(t);
    RankWhatIf rank;
    std::vector<std::string> window_warnings;
    if (request.graph_gap_ns >= 0) {
      g.stats.graph_gap_ns = request.graph_gap_ns;
      g.stats.graph_gap_source = analysis::GraphGapSource::kOption;
    }
    const auto windows = analysis::path_windows(t, links, g, window_warnings);
    rank.report = analysis::analyze_critical_path(t, links, g, windows);
    rank.report.warnings.insert(rank.report.warnings.end(), window_warnings.begin(), window_warnings.end());
    if (g.stats.gpu_nodes == 0) rank.report.warnings.push_back("the trace has no GPU work: the path is host time only");
    if (request.calibration.any()) rank.calibration = analysis::calibrate(g, windows, request.calibration);
    for (const auto& s : scenarios) rank.results.push_back(analysis::what_if(t, g, windows, s));
    rank.bounds = analysis::op_gain_bounds(t, g, windows, request.bound_ops);
    if (g.stats.gpu_nodes > 0) rank.summary = analysis::summarize_critical_path(t, g, windows, rank.report, rank.bounds);
    out.ranks.push_back(std::move(rank));
    if (context.cancelled()) throw Error(ErrorKind::kCancelled, "whatif cancelled");
  }
  out.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (!request.output_dir.empty()) {
    context.report(2, 3, fmt::format("writing {}", request.output_dir.string()));
    write_outputs(out, request.output_dir, out.files);
  }
  context.report(3, 3, "done");
  return out;
}

nlohmann::json report_json(const WhatIfOutcome& outcome) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rank : outcome.ranks) {
    const auto& r = rank.report;
    int64_t len = 0;
    const auto totals = iteration_totals(r, len);
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& p : r.paths) {
      paths.push_back({{"window", p.label},
                       {"stage", p.stage},
                       {"start_us", round3(us(p.start_ns))},
                       {"length_us", round3(us(p.length_ns()))},
                       {"breakdown", breakdown_json(p.by_category, p.length_ns())},
                       {"collective_wait_us", round3(us(p.collective_wait_ns))}});
    }
    nlohmann::json idle = nlohmann::json::array();
    for (const auto& i : r.idle) {
      idle.push_back({{"device", i.device},
                      {"stream", i.stream},
                      {"busy_us", round3(us(i.busy_ns))},
                      {"host_wait_us", round3(us(i.host_wait_ns))},
                      {"kernel_wait_us", round3(us(i.kernel_wait_ns))},
                      {"other_us", round3(us(i.other_ns))}});
    }
    const nlohmann::json bounds = analysis::to_json(rank.bounds);
    nlohmann::json calibration = nullptr;
    if (const auto& c = rank.calibration; c.applied) {
      calibration = {{"measured_step_us", c.measured_step_ns > 0 ? nlohmann::json(round3(us(c.measured_step_ns))) : nlohmann::json()},
                     {"kernel_overhead_us", round3(us(c.kernel_overhead_ns))},
                     {"host_speedup", round3(c.host_speedup)},
                     {"traced_step_us", round3(us(c.traced_step_ns))},
                     {"calibrated_step_us", round3(us(c.calibrated_step_ns))},
                     {"notes", c.notes}};
    }
    nlohmann::json whatifs = nlohmann::json::array();
    for (const auto& w : rank.results) whatifs.push_back(whatif_json(w));
    const auto& ls = r.launch;
    const auto& gs = r.graph;
    const int64_t whole_len = r.paths.empty() ? 0 : r.paths[0].length_ns();
    ranks.push_back(
        {{"rank", r.rank},
         {"trace", r.trace_path},
         {"bound", r.bound},
         {"iterations", r.paths.empty() ? 0 : r.paths.size() - 1},
         {"path_us", round3(us(len))},
         {"breakdown", breakdown_json(totals, len)},
         {"collective_wait_us", round3(us(collective_wait(r)))},
         {"paths", paths},
         {"ops", shares_json(r.ops, whole_len, gpu_total(r), 50)},
         {"kernels", shares_json(r.kernels, whole_len, gpu_total(r), 50)},
         {"gain_bounds", bounds},
         {"calibration", calibration},
         {"whatif", whatifs},
         {"idle", idle},
         {"launch",
          {{"launches", ls.launches},
           {"delay_p50_us", round3(ls.delay_p50_us)},
           {"delay_p90_us", round3(ls.delay_p90_us)},
           {"delay_p99_us", round3(ls.delay_p99_us)},
           {"delay_max_us", round3(ls.delay_max_us)},
           {"launch_call_p50_us", round3(ls.launch_call_p50_us)},
           {"kernel_p50_us", round3(ls.kernel_p50_us)},
           {"short_kernels", ls.short_kernels},
           {"short_kernel_us", round3(ls.short_kernel_us)},
           {"idle_stream_launch_latency_us", round3(ls.launch_latency_us)}}},
         {"graph",
          {{"cpu_nodes", gs.cpu_nodes},
           {"gpu_nodes", gs.gpu_nodes},
           {"launch_edges", gs.launch_edges},
           {"sync_edges", gs.sync_edges},
           {"stream_wait_edges", gs.stream_wait_edges},
           {"gpu_without_launch", gs.gpu_without_launch},
           {"launch_after_start", gs.launch_after_start},
           {"overlapping_spans", gs.overlapping_spans},
           {"cycle_edges_dropped", gs.cycle_edges_dropped},
           {"back_to_back_gap_us", round3(us(gs.back_to_back_gap_ns))},
           {"graph_gap_us", round3(us(gs.graph_gap_ns))},
           {"graph_gap_source", analysis::to_string(gs.graph_gap_source)},
           {"graph_gap_samples", gs.graph_gap_samples},
           {"cross_rank_edges", gs.cross_rank_edges}}},
         {"warnings", r.warnings}});
    if (has_gpu_work(rank)) {
      // The decision the loop acts on (docs/OPTIMIZATION_LOOP.md), as gap analysis reports it.
      const nlohmann::json summary = analysis::to_json(rank.summary);
      for (const char* key : {"gpu_busy_pct", "host_bound", "host_fixes", "recommendations", "headline"})
        ranks.back()[key] = summary[key];
    }
  }
  return {{"ranks", ranks},
          {"cross_rank_matched", outcome.cross_rank_matched},
          {"warnings", outcome.warnings},
          {"ingest_seconds", outcome.ingest_seconds},
          {"analysis_seconds", outcome.analysis_seconds}};
}

std::string console_text(const WhatIfOutcome& outcome) {
  std::string s;
  for (const auto& rank : outcome.ranks) {
    const auto& r = rank.report;
    int64_t len = 0;
    const auto totals = iteration_totals(r, len);
    const size_t iterations = r.paths.empty() ? 0 : r.paths.size() - 1;
    s += fmt::format("{}: {} — critical path {:.1f} us over {}\n",
                     r.rank >= 0 ? fmt::format("rank {}", r.rank) : std::string("trace"), r.bound, us(len),
                     iterations ? fmt::format("{} iteration(s)", iterations) : std::string("the whole trace"));
    std::string parts;
    for (size_t c = 0; c < kPathCategories; ++c) {
      parts += fmt::format("{}{} {:.1f}%", parts.empty() ? "" : ", ",
                           analysis::to_string(static_cast<PathCategory>(c)), pct(totals[c], len));
    }
    s += "  " + parts + "\n";
    if (r.graph.cross_rank_edges > 0)
      s += fmt::format("  collectives linked to the other ranks: {}; waiting for the last rank: {:.1f} us of the path\n",
                       r.graph.cross_rank_edges, us(collective_wait(r)));
    if (has_gpu_work(rank)) s += "  " + analysis::headline(rank.summary) + "\n";
    const auto& ls = r.launch;
    s += fmt::format(
        "  launches: {} | launch→start p50 {:.1f} us, p90 {:.1f} us | launch call p50 {:.1f} us | "
        "{} kernels shorter than their launch call\n\n",
        ls.launches, ls.delay_p50_us, ls.delay_p90_us, ls.launch_call_p50_us, ls.short_kernels);
    if (const auto& c = rank.calibration; c.applied) {
      s += fmt::format("  calibrated for the profiler's cost: median step {:.1f} us as traced, {:.1f} us calibrated{}\n",
                       us(c.traced_step_ns), us(c.calibrated_step_ns),
                       c.measured_step_ns > 0 ? fmt::format(" (measured {:.1f} us)", us(c.measured_step_ns)) : "");
      for (const auto& n : c.notes) s += "    " + n + "\n";
      s += "  the scenarios and gain bounds below start from the calibrated run\n\n";
    }
    const int64_t whole = r.paths.empty() ? 0 : r.paths[0].length_ns();
    const int64_t gpu = gpu_total(r);
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < r.ops.size() && rows.size() < 10; ++i) {
      const auto& o = r.ops[i];
      std::string gb = "-", hb = "-";
      for (const auto& b : rank.bounds) {
        if (b.name != o.name) continue;
        if (b.gpu_gain_ns) gb = fmt::format("{:.1f}", us(b.gpu_gain_ns));
        if (b.host_gain_ns) hb = fmt::format("{:.1f}", us(b.host_gain_ns));
      }
      rows.push_back({o.name, fmt::format("{:.1f}", pct(o.path_ns, whole)), fmt::format("{:.1f}", pct(o.kernel_ns, gpu)), gb, hb});
    }
    s += report::render_text_table({{"op (on the whole window's path)", false, 48},
                                    {"path %", true},
                                    {"kernel time %", true},
                                    {"gain if GPU work = 0 (us)", true},
                                    {"gain if host time = 0 (us)", true}},
                                   rows);
    if (!rank.results.empty()) {
      rows.clear();
      for (const auto& w : rank.results) {
        const bool steps = !w.iterations.empty();
        const int64_t before = steps ? w.iterations_before_ns : w.whole.before_ns;
        rows.push_back({w.scenario.text, std::to_string(w.matched),
                        steps ? fmt::format("{:.1f}", w.median_step_before_us) : fmt::format("{:.1f}", us(before)),
                        steps ? fmt::format("{:.1f}", w.median_step_after_us)
                              : fmt::format("{:.1f}", us(before - w.gain_ns())),
                        fmt::format("{:.1f}", us(w.gain_ns())), fmt::format("{:.1f}", pct(w.gain_ns(), before))});
      }
      s += "\n" + report::render_text_table({{"scenario", false, 48},
                                             {"matched", true},
                                             {iterations ? "median step before (us)" : "window before (us)", true},
                                             {iterations ? "median step after (us)" : "window after (us)", true},
                                             {"gain (us)", true},
                                             {"gain %", true}},
                                            rows);
    }
    s += "\n";
  }
  for (const auto& f : outcome.files) s += fmt::format("wrote {}\n", f.string());
  return s;
}

}  // namespace magpie::jobs
