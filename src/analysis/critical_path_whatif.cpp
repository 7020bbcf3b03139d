#include "analysis/critical_path_whatif.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

namespace {

constexpr const char* kSyntax =
    "op:NAME:2x, op:NAME:+30us, kernel:TEXT:1.5x, kernel:TEXT:+5us, cpu:2x, cpu:NAME:2x, "
    "launch:0 (or graph), sync:0 (or nosync), wait:0 (or nowait)";

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw Error(ErrorKind::kUsage, fmt::format("bad scenario '{}': {}", text, why), "", std::nullopt,
              fmt::format("write one of {}", kSyntax));
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

// "2x", "0.5x", "inf" → speedup; "+30us", "-5us", "+1.2ms" → added ns.
void parse_change(std::string_view text, std::string_view v, Scenario& s) {
  if (v == "inf" || v == "infx" || v == "0") {
    s.speedup = std::numeric_limits<double>::infinity();
    return;
  }
  if (v.ends_with('x')) {
    double f = 0;
    if (!parse_double(v.substr(0, v.size() - 1), f) || !(f > 0)) bad(text, fmt::format("'{}' is not a factor such as 2x", v));
    s.speedup = f;
    return;
  }
  if (v.starts_with('+') || v.starts_with('-')) {
    const double sign = v[0] == '-' ? -1 : 1;
    std::string_view num = v.substr(1);
    double scale = 0;
    for (auto [unit, ns] : {std::pair{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}) {
      if (num.ends_with(unit)) {
        num.remove_suffix(std::string_view(unit).size());
        scale = ns;
        break;
      }
    }
    double d = 0;
    if (scale == 0 || !parse_double(num, d) || d < 0)
      bad(text, fmt::format("'{}' is not a duration such as +30us (units ns, us, ms, s)", v));
    s.add_ns = static_cast<int64_t>(std::llround(sign * d * scale));
    return;
  }
  bad(text, fmt::format("'{}' is neither a factor (2x, inf) nor a duration (+30us)", v));
}

int64_t scaled(int64_t cost, const Scenario& s) {
  if (std::isinf(s.speedup)) return 0;
  const auto v = static_cast<int64_t>(std::llround(static_cast<double>(cost) / s.speedup));
  return std::max<int64_t>(0, v + s.add_ns);
}

// Input Dims as one-line JSON, so "[[4, 2048]]" and "[[4,2048]]" compare equal.
std::string compact_json(std::string_view raw) {
  auto j = nlohmann::json::parse(raw, nullptr, false);
  return j.is_discarded() ? std::string(raw) : j.dump();
}

// Whether an op row or one of the events around it is named `name`; returns
// the outermost such row (the call), else -1. Memoised per row.
class OpMatcher {
 public:
  OpMatcher(const trace::Trace& t, std::string_view name, std::string shapes = {})
      : t_(t), links_(trace::links_of(t)), id_(t.strings.find(name)), shapes_(std::move(shapes)) {
    if (known()) memo_.assign(t.events.size(), kUnknown);
  }
  bool known() const { return id_ != trace::StringPool::kNotInterned; }
  int32_t call_of(int32_t row) {
    if (!known() || row < 0) return -1;
    int32_t& slot = memo_[static_cast<size_t>(row)];
    if (slot != kUnknown) return slot;
    const int32_t parent = links_.parent[static_cast<size_t>(row)];
    const int32_t outer = parent >= 0 ? call_of(parent) : -1;
    slot = outer >= 0 ? outer : (t_.events.name[static_cast<size_t>(row)] == id_ && shapes_match(row) ? row : -1);
    return slot;
  }

 private:
  static constexpr int32_t kUnknown = -2;
  const trace::Trace& t_;
  const trace::TraceLinks& links_;
  trace::StringId id_;
  std::string shapes_;
  std::vector<int32_t> memo_;  // row → outermost call around it named `name`, -1 none
  std::unordered_map<uint32_t, bool> shapes_of_detail_;  // op_details row → its dims match

  bool shapes_match(int32_t row) {
    if (shapes_.empty()) return true;
    const uint32_t d = t_.events.detail[static_cast<size_t>(row)];
    if (d == trace::kNoDetail || d >= t_.events.op_details.size()) return false;
    auto [it, fresh] = shapes_of_detail_.try_emplace(d, false);
    if (fresh) it->second = compact_json(t_.str(t_.events.op_details[d].input_dims)) == shapes_;
    return it->second;
  }
};

bool is_host_work(NodeKind k) {
  return k == NodeKind::kCpu || k == NodeKind::kUntraced || k == NodeKind::kLaunch;
}

// The launch-overhead-removed (CUDA graph) timing: per iteration, the host
// time between the first and the last launch of the launching thread is
// replaced by the first launch call (the graph launch), and the GPU work it
// launched runs back to back on its stream (the first on each stream still
// waits for its launch). Blocking calls inside stay.
size_t graph_timing(const DependencyGraph& g, const std::vector<PathWindow>& windows, Timing& t,
                    std::vector<std::string>& warnings) {
  t.cut.assign(g.size(), 0);
  t.prev_w = g.prev_w;
  if (g.main_lane < 0) {
    warnings.push_back("no thread launches GPU work: nothing to put in a graph");
    return 0;
  }
  std::vector<int32_t> region_of(g.size(), -1);
  size_t regions = 0, syncs_inside = 0, changed = 0;
  const size_t first_iteration = windows.size() > 1 ? 1 : 0;
  for (size_t w = first_iteration; w < windows.size(); ++w) {
    int32_t first = kNoNode, last = kNoNode;
    for (const int32_t n : windows[w].nodes) {
      const auto v = static_cast<size_t>(n);
      if (g.kind[v] != NodeKind::kLaunch || g.lane[v] != static_cast<uint32_t>(g.main_lane)) continue;
      if (first == kNoNode || n < first) first = n;
      if (last == kNoNode || n > last) last = n;
    }
    if (first == kNoNode) continue;
    ++regions;
    for (int32_t n = first; n <= last; ++n) {
      const auto v = static_cast<size_t>(n);
      region_of[v] = static_cast<int32_t>(w);
      if (g.kind[v] == NodeKind::kSync) {
        ++syncs_inside;
        continue;
      }
      if (n != first) t.cost_ns[v] = 0, ++changed;
    }
  }
  std::vector<int32_t> seen_stream_region(g.lanes.size(), -1);
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.kind[v] != NodeKind::kGpu || g.dep[v] == kNoNode) continue;
    const int32_t region = region_of[static_cast<size_t>(g.dep[v])];
    if (region < 0) continue;
    if (seen_stream_region[g.lane[v]] != region) {
      seen_stream_region[g.lane[v]] = region;  // the first on its stream waits for the graph launch
      continue;
    }
    t.cut[v] |= 1;
    if (g.prev[v] != kNoNode) t.prev_w[v] = std::min(g.prev_w[v], g.stats.graph_gap_ns);
  }
  if (g.stats.graph_gap_source == GraphGapSource::kEagerQueue && regions > 0) {
    warnings.push_back(fmt::format(
        "kernels spaced {:.2f} us apart, the gap between queued eager kernels in this trace: a CUDA graph "
        "usually leaves less (0.3-0.5 us), so the gain is underestimated; measure it on the GPU with "
        "examples/critical_path/graph_gap.py and pass --graph-gap-us",
        static_cast<double>(g.stats.graph_gap_ns) / 1e3));
  }
  if (syncs_inside > 0) {
    warnings.push_back(fmt::format(
        "{} blocking call(s) sit between the first and last launch of a step: a CUDA graph could "
        "not capture them; they were kept",
        syncs_inside));
  }
  if (windows.size() <= 1) {
    warnings.push_back(
        "no iterations found: the whole window was treated as one graph (between the first and "
        "last launch)");
  }
  return changed + regions;
}

int64_t median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Fills the timing for op/kernel/cpu/sync scenarios; returns what matched.
size_t apply(const trace::Trace& trace, const DependencyGraph& g, const Scenario& s, Timing& t,
             std::vector<std::string>& warnings) {
  size_t matched = 0;
  switch (s.kind) {
    case ScenarioKind::kOp: {
      OpMatcher m(trace, s.name, s.shapes);
      if (!m.known()) break;
      std::unordered_map<int32_t, int32_t> last_of_call;  // call row → its last GPU node
      for (size_t v = 0; v < g.size(); ++v) {
        if (g.kind[v] != NodeKind::kGpu) continue;
        const int32_t call = m.call_of(g.op[v]);
        if (call < 0) continue;
        ++matched;
        if (s.add_ns == 0) {
          t.cost_ns[v] = scaled(g.cost_ns[v], s);
        } else if (auto [it, fresh] = last_of_call.try_emplace(call, static_cast<int32_t>(v));
                   !fresh && g.start_ns[v] > g.start_ns[static_cast<size_t>(it->second)]) {
          it->second = static_cast<int32_t>(v);
        }
      }
      if (s.add_ns != 0) {
        for (const auto& [call, v] : last_of_call) {
          auto& c = t.cost_ns[static_cast<size_t>(v)];
          c = std::max<int64_t>(0, scaled(c, s));
        }
        matched = last_of_call.size();
      }
      break;
    }
    case ScenarioKind::kKernel:
      for (size_t v = 0; v < g.size(); ++v) {
        if (g.kind[v] != NodeKind::kGpu) continue;
        if (trace.name(static_cast<size_t>(g.row[v])).find(s.name) == std::string_view::npos) continue;
        t.cost_ns[v] = scaled(g.cost_ns[v], s);
        ++matched;
      }
      break;
    case ScenarioKind::kCpu: {
      OpMatcher m(trace, s.name);
      if (!s.name.empty() && !m.known()) break;
      for (size_t v = 0; v < g.size(); ++v) {
        if (!is_host_work(g.kind[v])) continue;
        if (!s.name.empty() && m.call_of(g.op[v]) < 0) continue;
        t.cost_ns[v] = scaled(g.cost_ns[v], s);
        ++matched;
      }
      break;
    }
    case ScenarioKind::kSync:
      t.cut.assign(g.size(), 0);
      for (size_t v = 0; v < g.size(); ++v) {
        if (g.kind[v] != NodeKind::kSync || g.dep[v] == kNoNode) continue;
        t.cut[v] |= 1;
        ++matched;
      }
      break;
    case ScenarioKind::kWait:
      t.cut.assign(g.size(), 0);
      for (size_t v = 0; v < g.floor_end.size(); ++v) {
        if (g.floor_end[v] == INT64_MIN) continue;
        t.cut[v] |= 4;
        ++matched;
      }
      if (matched == 0) {
        warnings.push_back("no collective of this rank was matched to another rank's (give every rank's trace: "
                           "magpie whatif rank0.json.gz rank1.json.gz, or a folder)");
        return 0;
      }
      break;
    case ScenarioKind::kLaunch: break;
  }
  if (matched == 0 && s.kind != ScenarioKind::kLaunch) {
    warnings.push_back(fmt::format("scenario '{}' matched nothing in the trace{}", s.text,
                                   s.kind == ScenarioKind::kOp || s.kind == ScenarioKind::kCpu
                                       ? " (op names are exact, e.g. aten::mm)"
                                       : ""));
  }
  return matched;
}

// Each window's length on a schedule; [0] is the whole window. An
// iteration's length is the time between its completion and the previous
// one's (the first: from its start): when the host runs ahead of the GPU, a
// window's start says when the host got there and its end when the GPU did,
// and only the distance between completions says what a step costs. The
// lengths add up to the time from the first iteration's start to the last's end.
std::vector<int64_t> window_lengths(const Schedule& s, const std::vector<PathWindow>& windows) {
  std::vector<int64_t> out;
  out.reserve(windows.size());
  int64_t done = INT64_MIN;
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto [start, end] = window_span(s, windows[i]);
    if (i == 0) {
      out.push_back(end - start);
      continue;
    }
    if (done == INT64_MIN) done = start;
    const int64_t completed = std::max(done, end);
    out.push_back(completed - done);
    done = completed;
  }
  return out;
}

void summarize(const std::vector<PathWindow>& windows, const std::vector<int64_t>& before,
               const std::vector<int64_t>& after, WhatIfResult& r) {
  std::vector<int64_t> before_steps, after_steps;
  for (size_t i = 0; i < windows.size(); ++i) {
    WindowChange c{windows[i].label, before[i], after[i]};
    if (i == 0) {
      r.whole = c;
      continue;
    }
    r.iterations_before_ns += c.before_ns;
    r.iterations_after_ns += c.after_ns;
    before_steps.push_back(c.before_ns);
    after_steps.push_back(c.after_ns);
    r.iterations.push_back(std::move(c));
  }
  r.median_step_before_us = static_cast<double>(median_of(before_steps)) / 1e3;
  r.median_step_after_us = static_cast<double>(median_of(after_steps)) / 1e3;
}

}  // namespace

Scenario parse_scenario(std::string_view text) {
  Scenario s;
  s.text = std::string(text);
  if (text == "graph" || text == "launch:0" || text == "launch") {
    s.kind = ScenarioKind::kLaunch;
    return s;
  }
  if (text == "nosync" || text == "sync:0" || text == "sync") {
    s.kind = ScenarioKind::kSync;
    return s;
  }
  if (text == "nowait" || text == "wait:0" || text == "wait") {
    s.kind = ScenarioKind::kWait;
    return s;
  }
  const size_t first = text.find(':');
  if (first == std::string_view::npos) bad(text, "no ':' after the kind");
  const std::string_view kind = text.substr(0, first);
  const size_t last = text.rfind(':');
  const std::string_view value = text.substr(last + 1);
  const std::string_view name = last > first ? text.substr(first + 1, last - first - 1) : std::string_view{};
  if (kind == "op") {
    s.kind = ScenarioKind::kOp;
  } else if (kind == "kernel") {
    s.kind = ScenarioKind::kKernel;
  } else if (kind == "cpu") {
    s.kind = ScenarioKind::kCpu;
  } else {
    bad(text, fmt::format("unknown kind '{}'", kind));
  }
  if (s.kind != ScenarioKind::kCpu && name.empty()) bad(text, "missing the op name or kernel text");
  s.name = std::string(name);
  if (const size_t bracket = s.name.find(":["); s.kind == ScenarioKind::kOp && bracket != std::string::npos) {
    s.shapes = compact_json(std::string_view(s.name).substr(bracket + 1));
    if (s.shapes.empty() || s.shapes[0] != '[' || nlohmann::json::parse(s.shapes, nullptr, false).is_discarded())
      bad(text, "SHAPES must be a JSON list of shapes, as in op:aten::mm:[[4,2048],[2048,5632]]:2x");
    s.name.resize(bracket);
  }
  parse_change(text, value, s);
  if (s.kind == ScenarioKind::kCpu && s.add_ns != 0) bad(text, "cpu scenarios take a factor (cpu:2x)");
  return s;
}

int64_t WhatIfResult::gain_ns() const {
  if (!iterations.empty()) return iterations_before_ns - iterations_after_ns;
  return whole.before_ns - whole.after_ns;
}

WhatIfResult what_if(const trace::Trace& trace, const DependencyGraph& g,
                     const std::vector<PathWindow>& windows, const Scenario& scenario) {
  WhatIfResult r;
  r.scenario = scenario;
  Timing t;
  t.cost_ns = g.cost_ns;
  if (scenario.kind == ScenarioKind::kLaunch) {
    r.matched = graph_timing(g, windows, t, r.warnings);
  } else {
    r.matched = apply(trace, g, scenario, t, r.warnings);
  }
  const Schedule after = retime(g, t);
  const Schedule recorded = retime(g);  // the trace itself, unless edges were dropped
  summarize(windows, window_lengths(recorded, windows), window_lengths(after, windows), r);
  if (!windows.empty()) r.after_by_category = critical_path(g, after, windows[0]).by_category;
  return r;
}

std::vector<OpGainBound> op_gain_bounds(const trace::Trace& trace, const DependencyGraph& g,
                                        const std::vector<PathWindow>& windows, size_t top_n) {
  // Per node, the name of the innermost op around it (host) or that launched it (GPU).
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> name_of(g.size(), kNone);
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> by_name;  // StringId → gpu, host
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.op[v] < 0 || !(g.kind[v] == NodeKind::kGpu || is_host_work(g.kind[v]))) continue;
    name_of[v] = trace.events.name[static_cast<size_t>(g.op[v])];
    const int64_t d = g.end_ns[v] - g.start_ns[v];
    (g.kind[v] == NodeKind::kGpu ? by_name[name_of[v]].first : by_name[name_of[v]].second) += d;
  }
  std::vector<std::pair<uint32_t, std::pair<int64_t, int64_t>>> all(by_name.begin(), by_name.end());
  auto top_by = [&](bool gpu) {
    auto key = [gpu](const auto& p) { return gpu ? p.first : p.second; };
    std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
      return key(a.second) != key(b.second) ? key(a.second) > key(b.second) : a.first < b.first;
    });
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < all.size() && ids.size() < top_n; ++i)
      if (key(all[i].second) > 0) ids.push_back(all[i].first);
    return ids;
  };
  struct Job {
    uint32_t name;
    bool gpu;
    int64_t gain = 0;
  };
  std::vector<Job> jobs;
  for (const uint32_t id : top_by(true)) jobs.push_back({id, true});
  for (const uint32_t id : top_by(false)) jobs.push_back({id, false});
  const Schedule recorded = retime(g);
  const std::vector<int64_t> before = window_lengths(recorded, windows);
  // Each job's nodes, found in one pass.
  std::unordered_map<uint64_t, size_t> job_of;  // name << 1 | gpu → job
  for (size_t j = 0; j < jobs.size(); ++j) job_of[uint64_t{jobs[j].name} << 1 | (jobs[j].gpu ? 1u : 0u)] = j;
  std::vector<std::vector<int32_t>> nodes_of(jobs.size());
  for (size_t v = 0; v < g.size(); ++v) {
    if (name_of[v] == kNone) continue;
    const auto it = job_of.find(uint64_t{name_of[v]} << 1 | (g.kind[v] == NodeKind::kGpu ? 1u : 0u));
    if (it != job_of.end()) nodes_of[it->second].push_back(static_cast<int32_t>(v));
  }
  // Independent re-timings of one read-only graph on a few threads; each
  // worker keeps one copy of the costs (zeroing a job's nodes and putting
  // them back) and one schedule: 24 bytes a node.
  const unsigned workers = std::max(1u, std::min<unsigned>(std::min(default_thread_count(), 4u),
                                                           static_cast<unsigned>(jobs.size())));
  parallel_for(workers, workers, [&](size_t worker) {
    Timing t;
    t.cost_ns = g.cost_ns;
    Schedule s;
    for (size_t j = worker; j < jobs.size(); j += workers) {
      for (const int32_t v : nodes_of[j]) t.cost_ns[static_cast<size_t>(v)] = 0;
      retime(g, t, s);
      WhatIfResult r;
      summarize(windows, before, window_lengths(s, windows), r);
      jobs[j].gain = r.gain_ns();
      for (const int32_t v : nodes_of[j]) t.cost_ns[static_cast<size_t>(v)] = g.cost_ns[static_cast<size_t>(v)];
    }
  });
  std::vector<OpGainBound> out;
  for (const Job& job : jobs) {
    const std::string name(trace.strings.view(job.name));
    auto it = std::find_if(out.begin(), out.end(), [&](const OpGainBound& b) { return b.name == name; });
    if (it == out.end()) {
      out.push_back({name, by_name[job.name].first, by_name[job.name].second, 0, 0});
      it = out.end() - 1;
    }
    (job.gpu ? it->gpu_gain_ns : it->host_gain_ns) = job.gain;
  }
  std::sort(out.begin(), out.end(), [](const OpGainBound& a, const OpGainBound& b) {
    const int64_t ga = std::max(a.gpu_gain_ns, a.host_gain_ns), gb = std::max(b.gpu_gain_ns, b.host_gain_ns);
    return ga != gb ? ga > gb : a.name < b.name;
  });
  return out;
}

Calibration calibrate(DependencyGraph& g, const std::vector<PathWindow>& windows,
                      const CalibrationRequest& request) {
  Calibration c;
  c.measured_step_ns = request.measured_step_ns;
  c.kernel_overhead_ns = std::max<int64_t>(0, request.kernel_overhead_ns);
  auto median_step = [&](const std::vector<int64_t>& cost) {
    Timing t;
    t.cost_ns = cost;
    const std::vector<int64_t> lengths = window_lengths(retime(g, t), windows);
    if (lengths.size() <= 1) return lengths.empty() ? int64_t{0} : lengths[0];
    return median_of(std::vector<int64_t>(lengths.begin() + 1, lengths.end()));
  };
  c.traced_step_ns = median_step(g.cost_ns);
  if (!request.any()) return c;
  c.applied = true;
  std::vector<int64_t> base = g.cost_ns;
  if (c.kernel_overhead_ns > 0) {
    size_t events = 0;
    for (size_t v = 0; v < g.size(); ++v) {
      if (g.kind[v] != NodeKind::kGpu) continue;
      base[v] = std::max<int64_t>(0, base[v] - c.kernel_overhead_ns);
      ++events;
    }
    c.notes.push_back(fmt::format("{:.2f} us taken off each of {} GPU events", static_cast<double>(c.kernel_overhead_ns) / 1e3, events));
  }
  auto host_scaled = [&](double speedup) {
    std::vector<int64_t> cost = base;
    for (size_t v = 0; v < g.size(); ++v)
      if (is_host_work(g.kind[v])) cost[v] = static_cast<int64_t>(std::llround(static_cast<double>(base[v]) / speedup));
    return cost;
  };
  if (request.measured_step_ns > 0) {
    const int64_t target = request.measured_step_ns;
    const int64_t at_one = median_step(base);
    constexpr double kMaxSpeedup = 1000;
    const int64_t floor = median_step(host_scaled(kMaxSpeedup));
    if (at_one <= target) {
      c.notes.push_back(fmt::format(
          "the traced step ({:.1f} us) is not longer than the measured one ({:.1f} us): host time left as traced",
          static_cast<double>(at_one) / 1e3, static_cast<double>(target) / 1e3));
    } else {
      // The step shrinks monotonically with the host factor: bisect for the
      // smallest factor that reaches the measured step, or (when the GPU work
      // alone is longer) the GPU-bound floor.
      const int64_t goal = std::max(target, floor + floor / 200);
      if (floor > target) {
        c.notes.push_back(fmt::format(
            "even without host time the step takes {:.1f} us, more than the measured {:.1f} us: the "
            "GPU work is slower under the profiler; host time was shrunk only until the step became "
            "GPU-bound (--kernel-overhead-us takes the profiler's cost per GPU event off)",
            static_cast<double>(floor) / 1e3, static_cast<double>(target) / 1e3));
      }
      double lo = 1, hi = kMaxSpeedup;
      for (int i = 0; i < 50 && hi / lo > 1.0005; ++i) {
        const double mid = std::sqrt(lo * hi);
        (median_step(host_scaled(mid)) > goal ? lo : hi) = mid;
      }
      c.host_speedup = hi;
      base = host_scaled(hi);
      c.notes.push_back(fmt::format("host time divided by {:.3f}", hi));
    }
  }
  g.cost_ns = std::move(base);
  c.calibrated_step_ns = median_step(g.cost_ns);
  return c;
}

}  // namespace magpie::analysis
