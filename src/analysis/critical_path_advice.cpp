#include "analysis/critical_path_advice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace magpie::analysis {

namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}
double round3(double v) { return std::round(v * 1e3) / 1e3; }

PathWindowSummary window_summary(const CriticalPath& p) {
  return {p.label, p.stage, p.length_ns(), p.by_category};
}

// Busy time of the GPU (streams overlapping count once) inside [lo, hi].
int64_t gpu_busy_ns(const DependencyGraph& g, int64_t lo, int64_t hi) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.kind[v] != NodeKind::kGpu) continue;
    const int64_t s = std::max(g.start_ns[v], lo), e = std::min(g.end_ns[v], hi);
    if (e > s) spans.emplace_back(s, e);
  }
  std::sort(spans.begin(), spans.end());
  int64_t busy = 0, cur_s = 0, cur_e = INT64_MIN;
  for (const auto& [s, e] : spans) {
    if (s > cur_e) {
      if (cur_e > cur_s) busy += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e > cur_s) busy += cur_e - cur_s;
  return busy;
}

struct HostScenario {
  const char* scenario;
  const char* kind;
  const char* fix;
};
// The host-side fixes every summary predicts, each with the class of change it stands for.
constexpr HostScenario kHostScenarios[] = {
    {"launch:0", "launch",
     "launch overhead: capture the step in a CUDA graph (torch.compile mode=\"reduce-overhead\", "
     "torch.cuda.graphs) or launch fewer, fused kernels"},
    {"sync:0", "sync",
     "blocking syncs: remove .item()/.cpu()/.tolist() and explicit synchronizes from the step, "
     "or move them after the work that needs no result"},
    {"cpu:2x", "cpu",
     "host code: the Python and framework time between launches (fewer ops, torch.compile, "
     "leaner host code); the gain shown is for host time 2x faster"},
};

nlohmann::json breakdown_json(const PathWindowSummary& w) {
  nlohmann::json j = {{"window", w.label}, {"stage", w.stage}, {"length_us", round3(us(w.length_ns))}};
  nlohmann::json b = nlohmann::json::object();
  for (size_t c = 0; c < kPathCategories; ++c) {
    b[to_string(static_cast<PathCategory>(c))] = {{"us", round3(us(w.by_category[c]))},
                                                  {"pct", round3(pct(w.by_category[c], w.length_ns))}};
  }
  j["breakdown"] = b;
  return j;
}

}  // namespace

bool CriticalPathSummary::host_bound() const {
  return gpu_busy_pct < 50 || bound == "CPU-bound" || bound == "launch-bound" || bound == "sync-bound";
}

CriticalPathSummary summarize_critical_path(const trace::Trace& trace, const DependencyGraph& g,
                                            const std::vector<PathWindow>& windows,
                                            const CriticalPathReport& report,
                                            std::vector<OpGainBound> bounds, size_t top_ops) {
  CriticalPathSummary s;
  s.bound = report.bound;
  s.warnings = report.warnings;
  if (!report.paths.empty()) {
    const CriticalPath& whole = report.paths.front();
    s.whole = window_summary(whole);
    s.gpu_busy_pct = pct(gpu_busy_ns(g, whole.start_ns, whole.end_ns), whole.length_ns());
  }
  s.iterations = report.paths.empty() ? 0 : report.paths.size() - 1;
  if (s.iterations > 0) {
    std::vector<const CriticalPath*> steps;
    for (size_t i = 1; i < report.paths.size(); ++i) steps.push_back(&report.paths[i]);
    const size_t mid = steps.size() / 2;
    std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(mid), steps.end(),
                     [](const CriticalPath* a, const CriticalPath* b) { return a->length_ns() < b->length_ns(); });
    s.median_step = window_summary(*steps[mid]);
  }
  for (size_t i = 0; i < report.ops.size() && i < top_ops; ++i) s.ops.push_back(report.ops[i]);
  for (const auto& k : report.kernels) s.gpu_total_ns += k.kernel_ns;
  s.bounds = std::move(bounds);
  for (const auto& h : kHostScenarios) {
    const WhatIfResult r = what_if(trace, g, windows, parse_scenario(h.scenario));
    const bool steps = !r.iterations.empty();
    s.host_fixes.push_back({h.scenario, h.kind, h.fix, r.matched,
                            steps ? r.iterations_before_ns : r.whole.before_ns, r.gain_ns()});
    for (const auto& w : r.warnings) s.warnings.push_back(std::string(h.scenario) + ": " + w);
  }
  return s;
}

std::optional<CriticalPathSummary> summarize_critical_path(const trace::Trace& trace,
                                                           const trace::TraceLinks& links,
                                                           size_t bound_ops, size_t top_ops,
                                                           const std::vector<std::string>& named_ops,
                                                           TimeRange window_ns) {
  const DependencyGraph g = build_dependency_graph(trace, links);
  if (g.stats.gpu_nodes == 0) return std::nullopt;
  std::vector<std::string> window_warnings;
  auto windows = path_windows(trace, links, g, window_warnings);
  if (!window_ns.all() && !windows.empty()) {
    const size_t iterations = windows.size() - 1;
    std::erase_if(windows, [&, first = &windows.front()](const PathWindow& w) {
      return &w != first && (w.start_ns < window_ns.begin_ns || w.end_ns > window_ns.end_ns);
    });
    if (iterations > 0 && windows.size() == 1) {
      window_warnings.push_back(fmt::format(
          "none of the {} iterations lies wholly inside the time window: the critical path covers the whole trace",
          iterations));
    } else if (iterations > 0) {
      window_warnings.push_back(fmt::format(
          "{} of {} iterations lie wholly inside the time window: the step figures and predicted gains are "
          "theirs; the whole-window figures are the whole trace's",
          windows.size() - 1, iterations));
    } else {
      window_warnings.push_back("no iterations: the critical path covers the whole trace, not only the time window");
    }
  }
  CriticalPathReport report = analyze_critical_path(trace, links, g, windows);
  report.warnings.insert(report.warnings.end(), window_warnings.begin(), window_warnings.end());
  CriticalPathSummary s = summarize_critical_path(trace, g, windows, report,
                                                  op_gain_bounds(trace, g, windows, bound_ops), top_ops);
  for (const auto& name : named_ops) {
    const bool seen = std::any_of(s.named_gpu_gains.begin(), s.named_gpu_gains.end(),
                                  [&](const auto& p) { return p.first == name; });
    if (!seen) s.named_gpu_gains.emplace_back(name, what_if(trace, g, windows, parse_scenario("op:" + name + ":inf")).gain_ns());
  }
  return s;
}

std::vector<Recommendation> rank_recommendations(const CriticalPathSummary& s) {
  std::vector<Recommendation> host, kernel;
  for (const auto& h : s.host_fixes) {
    if (h.gain_ns <= 0) continue;
    host.push_back({h.kind, h.scenario, h.fix, h.gain_ns, pct(h.gain_ns, h.before_ns), 0, 0});
  }
  // Kernel-time rank among the ops with a bound (the top ops by GPU time all have one).
  std::vector<const OpGainBound*> by_kernel;
  for (const auto& b : s.bounds)
    if (b.kernel_ns > 0) by_kernel.push_back(&b);
  std::stable_sort(by_kernel.begin(), by_kernel.end(),
                   [](const OpGainBound* a, const OpGainBound* b) { return a->kernel_ns > b->kernel_ns; });
  const int64_t basis = s.host_fixes.empty() ? s.whole.length_ns : s.host_fixes.front().before_ns;
  for (size_t i = 0; i < by_kernel.size(); ++i) {
    const OpGainBound& b = *by_kernel[i];
    if (b.gpu_gain_ns <= 0) continue;
    kernel.push_back({"kernel", b.name,
                      "kernel work: a faster implementation of this op's GPU work (magpie replay, then "
                      "magpie compare); the gain shown is the bound with its GPU work at zero",
                      b.gpu_gain_ns, pct(b.gpu_gain_ns, basis), static_cast<int>(i + 1), b.kernel_ns});
  }
  auto by_gain = [](const Recommendation& a, const Recommendation& b) { return a.gain_ns > b.gain_ns; };
  std::stable_sort(host.begin(), host.end(), by_gain);
  std::stable_sort(kernel.begin(), kernel.end(), by_gain);
  std::vector<Recommendation> out = s.host_bound() ? host : kernel;
  const auto& rest = s.host_bound() ? kernel : host;
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

nlohmann::json to_json(const Recommendation& r) {
  nlohmann::json j = {{"kind", r.kind},
                      {"target", r.target},
                      {"fix", r.fix},
                      {"predicted_gain_us", round3(us(r.gain_ns))},
                      {"predicted_gain_pct", round3(r.gain_pct)}};
  if (r.kind == "kernel") {
    j["kernel_rank"] = r.kernel_rank;
    j["kernel_us"] = round3(us(r.kernel_ns));
  }
  return j;
}

nlohmann::json to_json(const std::vector<OpGainBound>& bounds) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& b : bounds) {
    a.push_back({{"op", b.name},
                 {"kernel_us", round3(us(b.kernel_ns))},
                 {"host_us", round3(us(b.host_ns))},
                 {"gpu_gain_bound_us", round3(us(b.gpu_gain_ns))},
                 {"host_gain_bound_us", round3(us(b.host_gain_ns))}});
  }
  return a;
}

nlohmann::json to_json(const CriticalPathSummary& s) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : s.ops) {
    ops.push_back({{"op", o.name},
                   {"path_us", round3(us(o.path_ns))},
                   {"path_pct", round3(pct(o.path_ns, s.whole.length_ns))},
                   {"kernel_us", round3(us(o.kernel_ns))},
                   {"kernel_pct", round3(pct(o.kernel_ns, s.gpu_total_ns))}});
  }
  const nlohmann::json bounds = to_json(s.bounds);
  nlohmann::json fixes = nlohmann::json::array();
  for (const auto& h : s.host_fixes) {
    fixes.push_back({{"scenario", h.scenario},
                     {"kind", h.kind},
                     {"matched", h.matched},
                     {"before_us", round3(us(h.before_ns))},
                     {"gain_us", round3(us(h.gain_ns))},
                     {"gain_pct", round3(pct(h.gain_ns, h.before_ns))}});
  }
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : rank_recommendations(s)) recs.push_back(to_json(r));
  return {{"bound", s.bound},
          {"gpu_busy_pct", round3(s.gpu_busy_pct)},
          {"host_bound", s.host_bound()},
          {"iterations", s.iterations},
          {"whole", breakdown_json(s.whole)},
          {"median_step", s.median_step ? breakdown_json(*s.median_step) : nlohmann::json()},
          {"ops", ops},
          {"gain_bounds", bounds},
          {"host_fixes", fixes},
          {"recommendations", recs},
          {"headline", headline(s)},
          {"warnings", s.warnings}};
}

std::string headline(const CriticalPathSummary& s) {
  const auto recs = rank_recommendations(s);
  std::string h = fmt::format("{} (GPU busy {:.1f}% of the window)", s.bound, s.gpu_busy_pct);
  if (recs.empty()) return h + ": no change predicts a gain";
  const auto& r = recs.front();
  if (r.kind == "kernel") {
    return h + fmt::format(": first kernel work on {} (kernel-time rank {}), at most {:.1f} us ({:.1f}%) end to end",
                           r.target, r.kernel_rank, us(r.gain_ns), r.gain_pct);
  }
  return h + fmt::format(": first the {} fix ({}), predicted {:.1f} us ({:.1f}%) end to end", r.kind, r.target,
                         us(r.gain_ns), r.gain_pct);
}

}  // namespace magpie::analysis
