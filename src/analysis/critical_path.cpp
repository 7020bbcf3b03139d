#include "analysis/critical_path.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "analysis/stage_splitter.hpp"
#include "core/parallel.hpp"

namespace magpie::analysis {

using trace::Category;

const char* to_string(PathCategory c) {
  switch (c) {
    case PathCategory::kCpu: return "cpu";
    case PathCategory::kLaunch: return "launch";
    case PathCategory::kGpu: return "gpu";
    case PathCategory::kSync: return "sync";
    case PathCategory::kCollective: return "collective";
    case PathCategory::kIdle: return "idle";
  }
  return "idle";
}

Schedule retime(const DependencyGraph& g, const Timing& timing) {
  Schedule s;
  retime(g, timing, s);
  return s;
}

void retime(const DependencyGraph& g, const Timing& timing, Schedule& s) {
  const auto& cost = timing.cost_ns.empty() ? g.cost_ns : timing.cost_ns;
  const auto& prev_w = timing.prev_w.empty() ? g.prev_w : timing.prev_w;
  const bool any_cut = !timing.cut.empty();
  const bool has_floor = !g.floor_end.empty();
  s.start_ns.resize(g.size());
  s.end_ns.resize(g.size());
  for (const uint32_t v : g.order) {
    const uint8_t cut = any_cut ? timing.cut[v] : 0;
    const int32_t p = g.prev[v], d = (cut & 1) ? kNoNode : g.dep[v];
    int64_t start;
    int64_t end;
    if (g.kind[v] == NodeKind::kGpu) {
      start = INT64_MIN;
      if (p != kNoNode) start = s.end_ns[static_cast<size_t>(p)] + prev_w[v];
      if (d != kNoNode) start = std::max(start, s.start_ns[static_cast<size_t>(d)] + g.dep_w[v]);
      if (const int32_t w = (cut & 2) ? kNoNode : g.wait[v]; w != kNoNode)
        start = std::max(start, s.end_ns[static_cast<size_t>(w)] + g.wait_w[v]);
      if (start == INT64_MIN) start = g.start_ns[v];
      end = start + cost[v];
      if (has_floor && !(cut & 4)) end = std::max(end, g.floor_end[v]);
    } else {
      start = p == kNoNode ? g.start_ns[v] : s.end_ns[static_cast<size_t>(p)];
      end = start + cost[v];
      if (g.kind[v] == NodeKind::kSync && d != kNoNode)
        end = std::max(end, s.end_ns[static_cast<size_t>(d)] + g.dep_w[v]);
    }
    s.start_ns[v] = start;
    s.end_ns[v] = end;
  }
}

namespace {

bool is_collective(const trace::Trace& t, uint32_t row) {
  const auto& e = t.events;
  if (e.detail[row] != trace::kNoDetail && e.category[row] == Category::kKernel &&
      e.detail[row] < e.kernel_details.size() &&
      e.kernel_details[e.detail[row]].collective != trace::kEmptyString)
    return true;
  const std::string_view n = t.name(row);
  return n.starts_with("nccl") || n.starts_with("ncclDevKernel") || n.find("rccl") != std::string_view::npos;
}

double percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1e3;
}

}  // namespace

PathCategory category_of(const trace::Trace& trace, const DependencyGraph& g, int32_t node) {
  if (node == kNoNode) return PathCategory::kIdle;
  const auto n = static_cast<size_t>(node);
  switch (g.kind[n]) {
    case NodeKind::kCpu:
    case NodeKind::kUntraced: return PathCategory::kCpu;
    case NodeKind::kIdle: return PathCategory::kIdle;
    case NodeKind::kLaunch: return PathCategory::kLaunch;
    case NodeKind::kSync: return PathCategory::kSync;
    case NodeKind::kGpu:
      return is_collective(trace, static_cast<uint32_t>(g.row[n])) ? PathCategory::kCollective
                                                                     : PathCategory::kGpu;
  }
  return PathCategory::kCpu;
}

std::string node_name(const trace::Trace& trace, const DependencyGraph& g, int32_t node) {
  if (node == kNoNode) return "(idle)";
  const auto n = static_cast<size_t>(node);
  if (g.op[n] >= 0) return std::string(trace.name(static_cast<size_t>(g.op[n])));
  if (g.kind[n] == NodeKind::kIdle) return "(host idle)";
  if (g.row[n] < 0) return "(host, no op)";
  return std::string(trace.name(static_cast<size_t>(g.row[n])));
}

std::pair<int64_t, int64_t> window_span(const Schedule& s, const PathWindow& w) {
  int64_t start = w.anchor == kNoNode ? w.start_ns : s.start_ns[static_cast<size_t>(w.anchor)];
  int64_t end = start;
  for (const int32_t n : w.nodes) end = std::max(end, s.end_ns[static_cast<size_t>(n)]);
  return {start, end};
}

WakeIndex wake_index(const DependencyGraph& g, const Schedule& s) {
  WakeIndex by_end;
  // Host pieces in id order come in runs sorted by end (a thread's pieces
  // follow each other): merging the runs is cheaper than sorting them all.
  std::vector<size_t> run_starts;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.kind[n] == NodeKind::kGpu || g.kind[n] == NodeKind::kIdle || s.end_ns[n] <= s.start_ns[n]) continue;
    if (by_end.empty() || s.end_ns[n] < by_end.back().first) run_starts.push_back(by_end.size());
    by_end.emplace_back(s.end_ns[n], static_cast<int32_t>(n));
  }
  if (run_starts.size() > 64) {
    std::sort(by_end.begin(), by_end.end());
    return by_end;
  }
  // Each run is sorted by (end, id): ends do not fall inside a run, ids rise.
  run_starts.push_back(by_end.size());
  while (run_starts.size() > 2) {
    std::vector<size_t> merged;
    size_t i = 0;
    for (; i + 2 < run_starts.size(); i += 2) {
      std::inplace_merge(by_end.begin() + static_cast<std::ptrdiff_t>(run_starts[i]),
                         by_end.begin() + static_cast<std::ptrdiff_t>(run_starts[i + 1]),
                         by_end.begin() + static_cast<std::ptrdiff_t>(run_starts[i + 2]));
      merged.push_back(run_starts[i]);
    }
    if (i + 1 < run_starts.size()) merged.push_back(run_starts[i]);  // an odd run waits a round
    merged.push_back(by_end.size());
    run_starts = std::move(merged);
  }
  return by_end;
}

CriticalPath critical_path(const DependencyGraph& g, const Schedule& s, const PathWindow& window,
                           WakeIndex* wake) {
  CriticalPath path;
  path.label = window.label;
  path.stage = window.stage;
  // Plain variables, not a structured binding: the lambdas below capture them
  // (clang before 16, which the fuzz build uses, cannot capture bindings).
  const std::pair<int64_t, int64_t> span = window_span(s, window);
  const int64_t win_start = span.first, win_end = span.second;
  path.start_ns = win_start;
  path.end_ns = win_end;
  std::vector<PathPiece> rev;
  // The walk covers [frontier, win_end]; each piece ends where the last one
  // began (overlapping work on one stream, a quirk of real traces, is cut).
  int64_t frontier = win_end;
  auto add = [&](int32_t node, int64_t a, int64_t b, PathCategory c) {
    a = std::max(a, win_start);
    b = std::min(b, frontier);
    if (b > a) rev.push_back({node, a, b, c});
    frontier = std::min(frontier, a);
  };
  auto kind_category = [&](size_t n) {
    switch (g.kind[n]) {
      case NodeKind::kIdle: return PathCategory::kIdle;
      case NodeKind::kLaunch: return PathCategory::kLaunch;
      case NodeKind::kSync: return PathCategory::kSync;
      case NodeKind::kGpu: return PathCategory::kGpu;
      default: return PathCategory::kCpu;
    }
  };
  // The walk starts at the node that ends last on this schedule.
  int32_t cur = kNoNode;
  for (const int32_t n : window.nodes) {
    if (cur == kNoNode || s.end_ns[static_cast<size_t>(n)] > s.end_ns[static_cast<size_t>(cur)]) cur = n;
  }
  // Threads hand work to each other without a recorded edge (the autograd
  // thread, a worker pool): where a thread waited (idle) or its timeline
  // starts, the path goes on at the host work on another thread that ended
  // last before the waiting one resumed. The index is built on first need.
  WakeIndex own;
  WakeIndex& by_end = wake ? *wake : own;
  auto woken_by = [&](uint32_t lane, int64_t after) -> int32_t {
    if (!wake && by_end.empty()) by_end = wake_index(g, s);
    auto it = std::upper_bound(by_end.begin(), by_end.end(), std::pair{frontier, INT32_MAX});
    for (int tries = 0; it != by_end.begin() && tries < 256; ++tries) {
      --it;
      if (it->first <= after) break;
      const auto n = static_cast<size_t>(it->second);
      if (g.lane[n] != lane && s.start_ns[n] < frontier) return it->second;
    }
    return kNoNode;
  };
  size_t steps = 0;
  while (cur != kNoNode && frontier > win_start && ++steps < 4 * g.size() + 16) {
    const auto v = static_cast<size_t>(cur);
    const int64_t start = s.start_ns[v], end = s.end_ns[v];
    if (g.kind[v] == NodeKind::kIdle) {
      if (const int32_t w = woken_by(g.lane[v], std::max(start, win_start)); w != kNoNode) {
        add(kNoNode, s.end_ns[static_cast<size_t>(w)], frontier, PathCategory::kIdle);
        cur = w;
        continue;
      }
    }
    if (g.kind[v] == NodeKind::kGpu) {
      // A collective held by another rank: its end is the other rank's
      // arrival plus the transfer; the time before that was spent waiting.
      if (!g.floor_end.empty() && g.floor_end[v] == end && end - g.cost_ns[v] > start) {
        add(cur, end - g.cost_ns[v], end, PathCategory::kGpu);
        const int64_t before = frontier;
        add(cur, start, end - g.cost_ns[v], PathCategory::kCollective);
        path.collective_wait_ns += before - frontier;
      } else {
        add(cur, start, end, PathCategory::kGpu);
      }
      const int32_t p = g.prev[v], d = g.dep[v], w = g.wait[v];
      const int64_t by_prev = p == kNoNode ? INT64_MIN : s.end_ns[static_cast<size_t>(p)] + g.prev_w[v];
      const int64_t by_dep = d == kNoNode ? INT64_MIN : s.start_ns[static_cast<size_t>(d)] + g.dep_w[v];
      const int64_t by_wait = w == kNoNode ? INT64_MIN : s.end_ns[static_cast<size_t>(w)] + g.wait_w[v];
      if (by_prev == INT64_MIN && by_dep == INT64_MIN && by_wait == INT64_MIN) break;
      if (by_wait >= by_prev && by_wait >= by_dep && by_wait >= start) {
        add(kNoNode, s.end_ns[static_cast<size_t>(w)], start, PathCategory::kIdle);
        cur = w;
      } else if (by_prev >= by_dep) {
        add(kNoNode, s.end_ns[static_cast<size_t>(p)], start, PathCategory::kIdle);
        cur = p;
      } else {
        const auto dn = static_cast<size_t>(d);
        add(d, s.start_ns[dn], start, PathCategory::kLaunch);
        cur = g.prev[dn];
      }
      continue;
    }
    const int32_t d = g.dep[v];
    if (g.kind[v] == NodeKind::kSync && d != kNoNode) {
      const auto dn = static_cast<size_t>(d);
      if (s.end_ns[dn] + g.dep_w[v] == end && s.end_ns[dn] > start) {
        add(cur, s.end_ns[dn], end, PathCategory::kSync);
        cur = d;
        continue;
      }
    }
    add(cur, start, end, kind_category(v));
    cur = g.prev[v];
    if (cur == kNoNode && frontier > win_start) {
      if (const int32_t w = woken_by(g.lane[v], win_start); w != kNoNode) {
        add(kNoNode, s.end_ns[static_cast<size_t>(w)], frontier, PathCategory::kIdle);
        cur = w;
      }
    }
  }
  if (frontier > win_start) rev.push_back({kNoNode, win_start, frontier, PathCategory::kIdle});
  path.pieces.assign(rev.rbegin(), rev.rend());
  for (const auto& piece : path.pieces)
    path.by_category[static_cast<size_t>(piece.category)] += piece.end_ns - piece.start_ns;
  return path;
}

std::vector<PathWindow> path_windows(const trace::Trace& trace, const trace::TraceLinks& links,
                                     const DependencyGraph& g, std::vector<std::string>& warnings) {
  std::vector<PathWindow> out;
  if (g.size() == 0) return out;
  PathWindow whole;
  whole.label = "whole trace";
  whole.nodes.resize(g.size());
  for (size_t n = 0; n < g.size(); ++n) whole.nodes[n] = static_cast<int32_t>(n);
  auto finish = [&](PathWindow& w) {
    int64_t best = INT64_MIN;
    for (const int32_t n : w.nodes) {
      if (g.end_ns[static_cast<size_t>(n)] > best) best = g.end_ns[static_cast<size_t>(n)], w.last = n;
    }
  };
  int64_t first = INT64_MAX;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.start_ns[n] < first) first = g.start_ns[n], whole.anchor = static_cast<int32_t>(n);
  }
  whole.start_ns = first;
  finish(whole);
  whole.end_ns = g.end_ns[static_cast<size_t>(whole.last)];
  out.push_back(std::move(whole));

  if (g.main_lane < 0) {
    warnings.push_back("no thread launches GPU work: only the whole window has a critical path");
    return out;
  }
  const StageSplit split = split_stages(trace, links);
  if (split.iterations.size() <= 1 && (split.iterations.empty() || split.iterations[0].step.grammar == "whole_trace")) {
    warnings.push_back(
        "no step annotations (ProfilerStep#N, engine steps) and no repeating op pattern: the "
        "critical path covers the whole window only");
    return out;
  }
  // The launching thread's nodes are one contiguous run of ids, in time order.
  const auto lane = static_cast<uint32_t>(g.main_lane);
  size_t lo = 0;
  while (lo < g.size() && g.lane[lo] != lane) ++lo;
  size_t hi = lo;
  while (hi < g.size() && g.lane[hi] == lane) ++hi;
  for (const Iteration& it : split.iterations) {
    PathWindow w;
    w.label = it.marker;
    w.stage = it.stage == Stage::kUnknown ? "" : std::string(to_string(it.stage));
    w.start_ns = it.start_ns;
    w.end_ns = it.end_ns;
    auto first_node = std::lower_bound(g.start_ns.begin() + static_cast<std::ptrdiff_t>(lo),
                                       g.start_ns.begin() + static_cast<std::ptrdiff_t>(hi), it.start_ns);
    for (auto i = static_cast<size_t>(first_node - g.start_ns.begin()); i < hi && g.start_ns[i] < it.end_ns; ++i)
      w.nodes.push_back(static_cast<int32_t>(i));
    if (w.nodes.empty()) continue;
    w.anchor = w.nodes.front();
    if (!g.node_of_gpu_row.empty()) {
      for (const uint32_t r : it.gpu_rows)
        if (g.node_of_gpu_row[r] != kNoNode) w.nodes.push_back(g.node_of_gpu_row[r]);
    }
    finish(w);
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

// Names are aggregated by string id (a hash of a number per GPU event, not
// of a string); ids past the pool stand for the names of unnamed host time.
constexpr uint32_t kNoOpName = UINT32_MAX, kHostIdleName = UINT32_MAX - 1;

uint32_t name_key(const trace::Trace& trace, const DependencyGraph& g, size_t n) {
  if (g.op[n] >= 0) return trace.events.name[static_cast<size_t>(g.op[n])];
  if (g.kind[n] == NodeKind::kIdle) return kHostIdleName;
  if (g.row[n] < 0 || g.kind[n] == NodeKind::kUntraced) return kNoOpName;  // inside an annotation only
  return trace.events.name[static_cast<size_t>(g.row[n])];
}

std::vector<NameShare> sorted(const trace::Trace& trace, std::unordered_map<uint32_t, NameShare>&& m) {
  std::vector<NameShare> v;
  v.reserve(m.size());
  for (auto& [key, share] : m) {
    share.name = key == kNoOpName ? "(host, no op)"
                 : key == kHostIdleName ? "(host idle)"
                                        : std::string(trace.strings.view(key));
    v.push_back(std::move(share));
  }
  std::sort(v.begin(), v.end(), [](const NameShare& a, const NameShare& b) {
    if (a.path_ns != b.path_ns) return a.path_ns > b.path_ns;
    if (a.kernel_ns != b.kernel_ns) return a.kernel_ns > b.kernel_ns;
    return a.name < b.name;
  });
  return v;
}

}  // namespace

CriticalPathReport analyze_critical_path(const trace::Trace& trace, const trace::TraceLinks& links,
                                         const DependencyGraph& g,
                                         const std::vector<PathWindow>& windows) {
  (void)links;
  CriticalPathReport r;
  r.trace_path = trace.path;
  r.rank = trace.rank;
  r.graph = g.stats;
  r.warnings = g.warnings;
  const Schedule recorded = retime(g);
  // Built once before the windows' walks, which then only read it and run
  // side by side (each window's path is independent of the others).
  WakeIndex wake = wake_index(g, recorded);
  r.paths.resize(windows.size());
  parallel_for(windows.size(), std::min(default_thread_count(), 4u), [&](size_t i) {
    CriticalPath p = critical_path(g, recorded, windows[i], &wake);
    // Collectives are GPU pieces of NCCL/RCCL kernels.
    for (auto& piece : p.pieces) {
      if (piece.category != PathCategory::kGpu || piece.node == kNoNode) continue;
      if (category_of(trace, g, piece.node) == PathCategory::kCollective) {
        const int64_t len = piece.end_ns - piece.start_ns;
        p.by_category[static_cast<size_t>(PathCategory::kGpu)] -= len;
        p.by_category[static_cast<size_t>(PathCategory::kCollective)] += len;
        piece.category = PathCategory::kCollective;
      }
    }
    r.paths[i] = std::move(p);
  });
  if (r.paths.empty()) return r;

  // Names on the whole window's path, beside their GPU time.
  std::unordered_map<uint32_t, NameShare> ops, kernels;
  for (const auto& piece : r.paths[0].pieces) {
    if (piece.node == kNoNode) continue;
    const int64_t len = piece.end_ns - piece.start_ns;
    const auto n = static_cast<size_t>(piece.node);
    const bool gpu_piece = g.kind[n] == NodeKind::kGpu &&
                           (piece.category == PathCategory::kGpu || piece.category == PathCategory::kCollective);
    auto& o = ops[name_key(trace, g, n)];
    o.path_ns += len;
    if (gpu_piece) {
      o.path_gpu_ns += len;
      auto& k = kernels[trace.events.name[static_cast<size_t>(g.row[n])]];
      k.path_ns += len;
      k.path_gpu_ns += len;
    }
  }
  std::vector<int64_t> delays;
  std::vector<int64_t> call_durations, kernel_durations;
  auto& ls = r.launch;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.kind[n] != NodeKind::kGpu) continue;
    const int64_t dur = g.end_ns[n] - g.start_ns[n];
    auto& k = kernels[trace.events.name[static_cast<size_t>(g.row[n])]];
    k.kernel_ns += dur;
    ++k.calls;
    auto& o = ops[name_key(trace, g, n)];
    o.kernel_ns += dur;
    ++o.calls;
    if (g.dep[n] == kNoNode) continue;
    const auto l = static_cast<size_t>(g.dep[n]);
    ++ls.launches;
    delays.push_back(g.start_ns[n] - g.start_ns[l]);
    const int64_t call = trace.events.dur_ns[static_cast<size_t>(g.row[l])];
    call_durations.push_back(call);
    kernel_durations.push_back(dur);
    if (dur < call) ++ls.short_kernels, ls.short_kernel_us += static_cast<double>(dur) / 1e3;
  }
  ls.delay_p50_us = percentile(delays, 0.5);
  ls.delay_p90_us = percentile(delays, 0.9);
  ls.delay_p99_us = percentile(delays, 0.99);
  ls.delay_max_us = percentile(delays, 1.0);
  ls.launch_call_p50_us = percentile(call_durations, 0.5);
  ls.kernel_p50_us = percentile(kernel_durations, 0.5);
  ls.launch_latency_us = static_cast<double>(g.stats.launch_latency_ns) / 1e3;
  r.ops = sorted(trace, std::move(ops));
  r.kernels = sorted(trace, std::move(kernels));

  // GPU idle per stream, split the way HTA splits it.
  for (size_t lane = 0; lane < g.lanes.size(); ++lane) {
    if (!g.lanes[lane].gpu) continue;
    IdleBreakdown ib;
    ib.device = g.lanes[lane].pid;
    ib.stream = g.lanes[lane].tid;
    r.idle.push_back(ib);
  }
  std::unordered_map<uint32_t, size_t> idle_of_lane;
  for (size_t lane = 0, k = 0; lane < g.lanes.size(); ++lane)
    if (g.lanes[lane].gpu) idle_of_lane[static_cast<uint32_t>(lane)] = k++;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.kind[n] != NodeKind::kGpu) continue;
    IdleBreakdown& ib = r.idle[idle_of_lane[g.lane[n]]];
    ib.busy_ns += g.end_ns[n] - g.start_ns[n];
    const int32_t p = g.prev[n];
    if (p == kNoNode) continue;
    const int64_t gap = g.start_ns[n] - g.end_ns[static_cast<size_t>(p)];
    if (gap <= 0) continue;
    const int32_t d = g.dep[n];
    if (d != kNoNode && g.start_ns[static_cast<size_t>(d)] >= g.end_ns[static_cast<size_t>(p)]) {
      ib.host_wait_ns += gap;
    } else if (d != kNoNode && (g.wait[n] == kNoNode || g.wait_w[n] == 0)) {
      ib.kernel_wait_ns += gap;
    } else {
      ib.other_ns += gap;
    }
  }

  // The class of the trace: the largest share over the iterations (the
  // whole window when there are none).
  std::array<int64_t, kPathCategories> total{};
  for (size_t i = r.paths.size() > 1 ? 1 : 0; i < r.paths.size(); ++i)
    for (size_t c = 0; c < kPathCategories; ++c) total[c] += r.paths[i].by_category[c];
  const auto top = static_cast<PathCategory>(std::max_element(total.begin(), total.end()) - total.begin());
  switch (top) {
    case PathCategory::kCpu: r.bound = "CPU-bound"; break;
    case PathCategory::kLaunch: r.bound = "launch-bound"; break;
    case PathCategory::kGpu: r.bound = "GPU-bound"; break;
    case PathCategory::kSync: r.bound = "sync-bound"; break;
    case PathCategory::kCollective: r.bound = "collective-bound"; break;
    case PathCategory::kIdle: r.bound = "idle-bound"; break;
  }
  return r;
}

}  // namespace magpie::analysis
