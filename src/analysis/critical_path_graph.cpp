#include "analysis/critical_path_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace magpie::analysis {

using trace::Category;
using trace::Phase;

const char* to_string(NodeKind k) {
  switch (k) {
    case NodeKind::kCpu: return "cpu";
    case NodeKind::kUntraced: return "untraced";
    case NodeKind::kIdle: return "idle";
    case NodeKind::kLaunch: return "launch";
    case NodeKind::kSync: return "sync";
    case NodeKind::kGpu: return "gpu";
  }
  return "cpu";
}

bool is_blocking_call(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
      "cudaMemcpy2D",          "cudaMemset",            "hipDeviceSynchronize", "hipStreamSynchronize",
      "hipEventSynchronize",   "hipMemcpy",             "hipMemset",            "cuCtxSynchronize",
      "cuStreamSynchronize",   "cuEventSynchronize",    "cuMemcpyDtoH_v2",      "cuMemcpyHtoD_v2",
      "cuMemcpy",              "cudaStreamSynchronize_ptsz"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

const char* to_string(GraphGapSource s) {
  switch (s) {
    case GraphGapSource::kOption: return "given (--graph-gap-us)";
    case GraphGapSource::kTraceGraphReplay: return "kernels replayed from a CUDA graph in this trace";
    case GraphGapSource::kGpuModel: return "measured on this GPU model without the profiler";
    case GraphGapSource::kEagerQueue: return "the gap between queued eager kernels (no better figure)";
  }
  return "?";
}

int64_t measured_graph_gap_ns(std::string_view device_name) {
  // examples/critical_path/graph_gap.py, docs/GPU_VALIDATION.md run 13: the H100
  // SXM (80GB HBM3), driver 580, 0.106 us in two separate runs.
  struct Measured {
    std::string_view must_contain[2];
    int64_t gap_ns;
  };
  static constexpr Measured kMeasured[] = {{{"H100", "HBM3"}, 106}};
  for (const auto& m : kMeasured) {
    if (device_name.find(m.must_contain[0]) != std::string_view::npos &&
        device_name.find(m.must_contain[1]) != std::string_view::npos)
      return m.gap_ns;
  }
  return -1;
}

namespace {

// Host time without an event longer than this is a thread waiting, not
// working: it is idle on the path and CPU scenarios do not shorten it.
constexpr int64_t kIdleGapNs = 1'000'000;
constexpr int64_t kDefaultLaunchLatencyNs = 5'000;
constexpr int64_t kDefaultBackToBackGapNs = 1'000;

bool is_cpu_span(Category c) {
  return !trace::is_gpu_activity(c) && c != Category::kGpuUserAnnotation && c != Category::kAc2g &&
         c != Category::kTrace && c != Category::kCpuInstantEvent;
}

bool owns_cpu_time(Category c) {
  return c == Category::kCpuOp || c == Category::kCudaRuntime || c == Category::kCudaDriver ||
         c == Category::kPythonFunction;
}

int64_t median(std::vector<int64_t> v, int64_t fallback) {
  if (v.empty()) return fallback;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

struct Span {
  int64_t ts, end;
  uint32_t row;
  bool operator<(const Span& o) const {
    if (ts != o.ts) return ts < o.ts;
    if (end != o.end) return end > o.end;
    return row < o.row;
  }
};

class Builder {
 public:
  Builder(const trace::Trace& t, const trace::TraceLinks& l) : trace_(t), e_(t.events), links_(l) {}

  DependencyGraph build() {
    first_node_of_row_.assign(e_.size(), kNoNode);
    last_node_of_row_.assign(e_.size(), kNoNode);
    launches_.assign(e_.size(), 0);
    blocking_copy_.assign(e_.size(), 0);
    for (size_t r = 0; r < e_.size(); ++r) {
      const int32_t l = links_.launch_of[r];
      if (l < 0) continue;
      const auto lr = static_cast<size_t>(l);
      launches_[lr] = 1;
      // A copy call that returned only after its copy ended blocked on it
      // (D2H into pageable memory: .item(), .cpu(), .tolist()).
      if (e_.category[r] == Category::kGpuMemcpy && e_.end_ns(lr) >= e_.end_ns(r) && e_.ts_ns[r] > e_.ts_ns[lr])
        blocking_copy_[lr] = 1;
    }
    cpu_lanes();
    gpu_lanes();
    launch_edges();
    sync_edges();
    stream_wait_edges();
    topological_order();
    finish();
    return std::move(g_);
  }

 private:
  int32_t add_node(uint32_t lane, int64_t start, int64_t end, NodeKind kind, int32_t row, int32_t op) {
    const auto id = static_cast<int32_t>(g_.start_ns.size());
    g_.start_ns.push_back(start);
    g_.end_ns.push_back(end);
    g_.cost_ns.push_back(end - start);
    g_.row.push_back(row);
    g_.kind.push_back(kind);
    g_.lane.push_back(lane);
    g_.prev.push_back(lane_last_ < 0 ? kNoNode : lane_last_);
    g_.prev_w.push_back(0);
    g_.dep.push_back(kNoNode);
    g_.dep_w.push_back(0);
    g_.wait.push_back(kNoNode);
    g_.wait_w.push_back(0);
    g_.op.push_back(op);
    lane_last_ = id;
    if (row >= 0) {
      auto r = static_cast<size_t>(row);
      if (first_node_of_row_[r] == kNoNode) first_node_of_row_[r] = id;
      last_node_of_row_[r] = id;
    }
    return id;
  }

  NodeKind kind_of_row(uint32_t row) const {
    const Category c = e_.category[row];
    if (!owns_cpu_time(c)) return NodeKind::kUntraced;
    if (trace::is_launch_api(c)) {
      if (blocking_copy_[row] || is_blocking_call(trace_.name(row))) return NodeKind::kSync;
      if (launches_[row]) return NodeKind::kLaunch;
    }
    return NodeKind::kCpu;
  }

  // Cuts each thread's timeline into pieces owned by the innermost event.
  void cpu_lanes() {
    std::map<std::pair<int64_t, int64_t>, std::vector<Span>> threads;
    for (uint32_t r = 0; r < e_.size(); ++r) {
      if (e_.phase[r] != Phase::kComplete || !is_cpu_span(e_.category[r])) continue;
      threads[{e_.pid[r], e_.tid[r]}].push_back({e_.ts_ns[r], e_.end_ns(r), r});
    }
    struct Open {
      uint32_t row;
      int64_t end;
      int32_t op;  // innermost cpu_op among this and the ones around it
    };
    std::vector<Open> stack;
    for (auto& [key, spans] : threads) {
      if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
      const auto lane = static_cast<uint32_t>(g_.lanes.size());
      g_.lanes.push_back({false, key.first, key.second});
      lane_last_ = kNoNode;
      stack.clear();
      int64_t cursor = spans.empty() ? 0 : spans.front().ts;
      auto emit = [&](int64_t to) {
        if (to <= cursor) return;
        if (stack.empty()) {
          add_node(lane, cursor, to, to - cursor >= kIdleGapNs ? NodeKind::kIdle : NodeKind::kUntraced, -1, -1);
        } else {
          const Open& o = stack.back();
          add_node(lane, cursor, to, kind_of_row(o.row), static_cast<int32_t>(o.row), o.op);
        }
        cursor = to;
      };
      for (const Span& s : spans) {
        while (!stack.empty() && stack.back().end <= s.ts) {
          emit(stack.back().end);
          stack.pop_back();
        }
        emit(s.ts);
        int64_t end = s.end;
        if (!stack.empty() && end > stack.back().end) {
          ++g_.stats.overlapping_spans;  // not nested: cut it at its parent's end
          end = stack.back().end;
        }
        const int32_t op = e_.category[s.row] == Category::kCpuOp
                               ? static_cast<int32_t>(s.row)
                               : (stack.empty() ? -1 : stack.back().op);
        stack.push_back({s.row, end, op});
        // A call that launches and then blocks (a blocking copy) gets a
        // zero-length launch node first: its work depends on that, and its
        // end on its work. A zero-length launch or sync still needs its node.
        const NodeKind kind = kind_of_row(s.row);
        if (kind == NodeKind::kSync && launches_[s.row]) {
          add_node(lane, s.ts, s.ts, NodeKind::kLaunch, static_cast<int32_t>(s.row), op);
        } else if (end == s.ts && (kind == NodeKind::kLaunch || kind == NodeKind::kSync)) {
          add_node(lane, s.ts, s.ts, kind, static_cast<int32_t>(s.row), op);
        }
      }
      while (!stack.empty()) {
        emit(stack.back().end);
        stack.pop_back();
      }
    }
    g_.stats.cpu_nodes = g_.size();
  }

  void gpu_lanes() {
    std::map<std::pair<int64_t, int64_t>, std::vector<Span>> streams;
    for (uint32_t r = 0; r < e_.size(); ++r) {
      if (e_.phase[r] != Phase::kComplete || !trace::is_gpu_activity(e_.category[r])) continue;
      streams[{e_.device[r], e_.stream[r]}].push_back({e_.ts_ns[r], e_.end_ns(r), r});
    }
    if (!streams.empty()) g_.node_of_gpu_row.assign(e_.size(), kNoNode);
    for (auto& [key, work] : streams) {
      if (!std::is_sorted(work.begin(), work.end())) std::sort(work.begin(), work.end());
      const auto lane = static_cast<uint32_t>(g_.lanes.size());
      g_.lanes.push_back({true, key.first, key.second});
      lane_last_ = kNoNode;
      for (const Span& s : work) {
        const int32_t op = trace::launching_op(trace_, links_, s.row);
        const int32_t id = add_node(lane, s.ts, s.end, NodeKind::kGpu, static_cast<int32_t>(s.row), op);
        g_.node_of_gpu_row[s.row] = id;
      }
    }
    g_.stats.gpu_nodes = g_.size() - g_.stats.cpu_nodes;
  }

  // Launch latency and stream gaps, chosen so that each GPU node has one
  // binding edge with its measured weight (docs/CRITICAL_PATH.md).
  void launch_edges() {
    const size_t first_gpu = g_.stats.cpu_nodes;
    std::vector<int64_t> idle_latency, queued_gap;
    auto launch_node = [&](size_t n) -> int32_t {
      const int32_t l = links_.launch_of[static_cast<size_t>(g_.row[n])];
      return l < 0 ? kNoNode : first_node_of_row_[static_cast<size_t>(l)];
    };
    for (size_t n = first_gpu; n < g_.size(); ++n) {
      const int32_t l = launch_node(n);
      if (l == kNoNode) continue;
      const int64_t latency = g_.start_ns[n] - g_.start_ns[static_cast<size_t>(l)];
      const int32_t p = g_.prev[n];
      if (latency >= 0 && (p == kNoNode || g_.end_ns[static_cast<size_t>(p)] <= g_.start_ns[static_cast<size_t>(l)]))
        idle_latency.push_back(latency);
    }
    const int64_t lambda = median(idle_latency, kDefaultLaunchLatencyNs);
    for (size_t n = first_gpu; n < g_.size(); ++n) {
      const int32_t l = launch_node(n), p = g_.prev[n];
      if (p != kNoNode && l != kNoNode &&
          g_.start_ns[static_cast<size_t>(l)] + lambda < g_.end_ns[static_cast<size_t>(p)]) {
        queued_gap.push_back(g_.start_ns[n] - g_.end_ns[static_cast<size_t>(p)]);
      }
    }
    const int64_t gap_floor = std::clamp<int64_t>(median(queued_gap, kDefaultBackToBackGapNs), 0, 3'000);
    g_.stats.launch_latency_ns = lambda;
    g_.stats.back_to_back_gap_ns = queued_gap.size() >= 20 ? gap_floor : kDefaultBackToBackGapNs;
    graph_gap(launch_node);

    for (size_t n = first_gpu; n < g_.size(); ++n) {
      const int32_t l = launch_node(n), p = g_.prev[n];
      const int64_t gap = p == kNoNode ? 0 : g_.start_ns[n] - g_.end_ns[static_cast<size_t>(p)];
      if (l == kNoNode) {
        ++g_.stats.gpu_without_launch;
        g_.prev_w[n] = gap;  // nothing else explains its start
        continue;
      }
      const auto ls = static_cast<size_t>(l);
      const int64_t latency = g_.start_ns[n] - g_.start_ns[ls];
      if (latency < 0) {
        ++g_.stats.launch_after_start;  // clock skew: the launch edge would move it later
        g_.prev_w[n] = gap;
        continue;
      }
      g_.dep[n] = l;
      ++g_.stats.launch_edges;
      const bool launch_binds = p == kNoNode || g_.start_ns[ls] + lambda >= g_.end_ns[static_cast<size_t>(p)];
      if (launch_binds) {
        g_.dep_w[n] = latency;
        g_.prev_w[n] = std::min(gap, gap_floor);
      } else {
        g_.dep_w[n] = std::min(latency, lambda);
        g_.prev_w[n] = gap;
      }
    }
  }

  // launch:0's spacing. Kernels replayed by one graph launch, one after the
  // other on a stream, show the graph's own gap (profiler cost included);
  // without them, a figure measured on this GPU model; else the eager gap.
  template <typename LaunchNode>
  void graph_gap(const LaunchNode& launch_node) {
    std::vector<int64_t> gaps;
    const size_t first_gpu = g_.stats.cpu_nodes;
    for (size_t n = first_gpu; n < g_.size(); ++n) {
      const int32_t l = launch_node(n), p = g_.prev[n];
      if (l == kNoNode || p == kNoNode || launch_node(static_cast<size_t>(p)) != l) continue;
      if (!trace::is_graph_launch(trace_.name(static_cast<size_t>(g_.row[static_cast<size_t>(l)])))) continue;
      const int64_t gap = g_.start_ns[n] - g_.end_ns[static_cast<size_t>(p)];
      if (gap >= 0) gaps.push_back(gap);
    }
    g_.stats.graph_gap_samples = gaps.size();
    if (gaps.size() >= 20) {
      g_.stats.graph_gap_ns = median(gaps, 0);
      g_.stats.graph_gap_source = GraphGapSource::kTraceGraphReplay;
      return;
    }
    for (const auto& d : trace_.devices) {
      if (const int64_t measured = measured_graph_gap_ns(d.name); measured >= 0) {
        g_.stats.graph_gap_ns = measured;
        g_.stats.graph_gap_source = GraphGapSource::kGpuModel;
        return;
      }
    }
    g_.stats.graph_gap_ns = g_.stats.back_to_back_gap_ns;
    g_.stats.graph_gap_source = GraphGapSource::kEagerQueue;
  }

  // A blocking call waited for the GPU work, launched before it began, that
  // ended last before it returned.
  void sync_edges() {
    const size_t first_gpu = g_.stats.cpu_nodes;
    std::vector<int32_t> by_end;
    for (size_t n = first_gpu; n < g_.size(); ++n) by_end.push_back(static_cast<int32_t>(n));
    std::sort(by_end.begin(), by_end.end(), [&](int32_t a, int32_t b) {
      return g_.end_ns[static_cast<size_t>(a)] < g_.end_ns[static_cast<size_t>(b)];
    });
    auto issued_at = [&](size_t gpu) {
      const int32_t l = g_.dep[gpu];
      return l == kNoNode ? g_.start_ns[gpu] : g_.start_ns[static_cast<size_t>(l)];
    };
    for (size_t n = 0; n < first_gpu; ++n) {
      if (g_.kind[n] != NodeKind::kSync) continue;
      const auto row = static_cast<size_t>(g_.row[n]);
      if (last_node_of_row_[row] != static_cast<int32_t>(n)) continue;  // the call's last piece waits
      const int64_t call_start = e_.ts_ns[row], end = g_.end_ns[n];
      auto it = std::upper_bound(by_end.begin(), by_end.end(), end, [&](int64_t v, int32_t node) {
        return v < g_.end_ns[static_cast<size_t>(node)];
      });
      int32_t dep = kNoNode;
      for (int tries = 0; it != by_end.begin() && tries < 64; ++tries) {
        --it;
        if (issued_at(static_cast<size_t>(*it)) <= call_start) {
          dep = *it;
          break;
        }
      }
      if (dep == kNoNode) continue;
      // Waited: it returned `end - dep_end` after the work ended, and costs
      // that much when there is nothing to wait for. Did not wait: it costs
      // its own time, and would return as soon as the work ended.
      const int64_t dep_end = g_.end_ns[static_cast<size_t>(dep)];
      const bool waited = dep_end > g_.start_ns[n];
      g_.dep[n] = dep;
      g_.dep_w[n] = waited ? end - dep_end : 0;
      g_.cost_ns[n] = waited ? end - dep_end : end - g_.start_ns[n];
      ++g_.stats.sync_edges;
    }
  }

  // cudaEventRecord after a launch, cudaStreamWaitEvent, then a launch onto
  // another stream: that launch's work waits for the recorded work.
  void stream_wait_edges() {
    std::vector<int32_t> gpu_of_launch_row(e_.size(), kNoNode);
    for (size_t n = g_.stats.cpu_nodes; n < g_.size(); ++n) {
      const int32_t l = links_.launch_of[static_cast<size_t>(g_.row[n])];
      if (l >= 0 && gpu_of_launch_row[static_cast<size_t>(l)] == kNoNode)
        gpu_of_launch_row[static_cast<size_t>(l)] = static_cast<int32_t>(n);
    }
    int32_t last_launched = kNoNode, recorded = kNoNode, waiting = kNoNode;
    uint32_t lane = UINT32_MAX;
    for (size_t n = 0; n < g_.stats.cpu_nodes; ++n) {
      if (g_.lane[n] != lane) lane = g_.lane[n], last_launched = recorded = waiting = kNoNode;
      if (g_.row[n] < 0) continue;
      const auto row = static_cast<size_t>(g_.row[n]);
      if (first_node_of_row_[row] != static_cast<int32_t>(n) || !trace::is_launch_api(e_.category[row]))
        continue;
      const std::string_view name = trace_.name(row);
      if (name.starts_with("cudaEventRecord") || name.starts_with("hipEventRecord")) {
        recorded = last_launched;
      } else if (name.starts_with("cudaStreamWaitEvent") || name.starts_with("hipStreamWaitEvent")) {
        waiting = recorded;
      } else if (const int32_t gpu = gpu_of_launch_row[row]; gpu != kNoNode) {
        const auto gn = static_cast<size_t>(gpu);
        if (waiting != kNoNode && g_.lane[static_cast<size_t>(waiting)] != g_.lane[gn]) {
          const auto wn = static_cast<size_t>(waiting);
          if (g_.end_ns[wn] <= g_.start_ns[gn]) {
            g_.wait[gn] = waiting;
            ++g_.stats.stream_wait_edges;
            // Binding when the awaited work ended after the lower bounds of
            // the other edges: the work was queued and held back by the wait.
            const int64_t floor_prev = g_.prev[gn] == kNoNode ? INT64_MIN
                                       : g_.end_ns[static_cast<size_t>(g_.prev[gn])] +
                                             std::min(g_.prev_w[gn], g_.stats.back_to_back_gap_ns);
            const int64_t floor_launch = g_.dep[gn] == kNoNode ? INT64_MIN
                                         : g_.start_ns[static_cast<size_t>(g_.dep[gn])] +
                                               std::min(g_.dep_w[gn], g_.stats.launch_latency_ns);
            if (g_.end_ns[wn] >= std::max(floor_prev, floor_launch)) {
              g_.wait_w[gn] = g_.start_ns[gn] - g_.end_ns[wn];
              if (g_.prev[gn] != kNoNode) g_.prev_w[gn] = std::min(g_.prev_w[gn], g_.stats.back_to_back_gap_ns);
              if (g_.dep[gn] != kNoNode) g_.dep_w[gn] = std::min(g_.dep_w[gn], g_.stats.launch_latency_ns);
            }
          }
        }
        waiting = kNoNode;
        last_launched = gpu;
      }
    }
  }

  // Kahn's algorithm; edges that close a cycle (only odd input makes one) are
  // dropped, lane order first kept.
  void topological_order() {
    const size_t n = g_.size();
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::vector<uint32_t> indegree(n, 0), offsets(n + 1, 0), succ;
      auto for_preds = [&](size_t v, auto&& f) {
        if (g_.prev[v] != kNoNode) f(static_cast<size_t>(g_.prev[v]));
        if (g_.dep[v] != kNoNode) f(static_cast<size_t>(g_.dep[v]));
        if (g_.wait[v] != kNoNode) f(static_cast<size_t>(g_.wait[v]));
      };
      for (size_t v = 0; v < n; ++v) for_preds(v, [&](size_t u) { ++offsets[u + 1], ++indegree[v]; });
      for (size_t v = 0; v < n; ++v) offsets[v + 1] += offsets[v];
      succ.resize(offsets[n]);
      std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
      for (size_t v = 0; v < n; ++v) for_preds(v, [&](size_t u) { succ[fill[u]++] = static_cast<uint32_t>(v); });
      g_.order.clear();
      g_.order.reserve(n);
      for (size_t v = 0; v < n; ++v)
        if (indegree[v] == 0) g_.order.push_back(static_cast<uint32_t>(v));
      for (size_t i = 0; i < g_.order.size(); ++i) {
        const uint32_t u = g_.order[i];
        for (uint32_t k = offsets[u]; k < offsets[u + 1]; ++k)
          if (--indegree[succ[k]] == 0) g_.order.push_back(succ[k]);
      }
      if (g_.order.size() == n) return;
      for (size_t v = 0; v < n; ++v) {
        if (indegree[v] == 0) continue;
        g_.stats.cycle_edges_dropped += (g_.dep[v] != kNoNode) + (g_.wait[v] != kNoNode);
        g_.dep[v] = g_.wait[v] = kNoNode;
      }
    }
  }

  void finish() {
    std::map<uint32_t, size_t> launches_per_lane;
    for (size_t n = 0; n < g_.stats.cpu_nodes; ++n)
      if (g_.kind[n] == NodeKind::kLaunch) ++launches_per_lane[g_.lane[n]];
    size_t most = 0;
    for (const auto& [lane, count] : launches_per_lane)
      if (count > most) most = count, g_.main_lane = static_cast<int32_t>(lane);
    const auto& s = g_.stats;
    if (s.gpu_nodes > 0 && s.gpu_without_launch * 10 > s.gpu_nodes) {
      g_.warnings.push_back(fmt::format(
          "{} of {} GPU events have no launch call in the trace (missing correlation ids): their "
          "start is taken as given, so CPU-side what-ifs cannot move them",
          s.gpu_without_launch, s.gpu_nodes));
    }
    if (s.launch_after_start > 0) {
      g_.warnings.push_back(fmt::format(
          "{} GPU events start before their launch call (clock skew between CPU and GPU): their "
          "launch edges were left out",
          s.launch_after_start));
    }
    if (s.cycle_edges_dropped > 0) {
      g_.warnings.push_back(fmt::format(
          "the dependencies formed a cycle (inconsistent timestamps or flows): {} edge(s) were "
          "dropped to break it; the critical path is partial",
          s.cycle_edges_dropped));
    }
  }

  const trace::Trace& trace_;
  const trace::EventTable& e_;
  const trace::TraceLinks& links_;
  DependencyGraph g_;
  std::vector<int32_t> first_node_of_row_, last_node_of_row_;
  std::vector<uint8_t> launches_, blocking_copy_;
  int32_t lane_last_ = kNoNode;
};

}  // namespace

DependencyGraph build_dependency_graph(const trace::Trace& trace, const trace::TraceLinks& links) {
  return Builder(trace, links).build();
}

}  // namespace magpie::analysis
