#include "trace/trace_links.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <thread>
#include <unordered_map>

namespace magpie::trace {

bool is_graph_launch(std::string_view n) {
  return n == "cudaGraphLaunch" || n == "hipGraphLaunch" || n == "cuGraphLaunch" ||
         n == "cudaGraphLaunch_v10000" || n == "cuGraphLaunch_ptsz" || n == "cudaGraphLaunch_ptsz";
}

namespace {

bool is_cpu_span(Category c) {
  return !is_gpu_activity(c) && c != Category::kGpuUserAnnotation && c != Category::kAc2g;
}

void build_op_tree(const Trace& trace, TraceLinks& links) {
  const auto& t = trace.events;
  // Bucket by thread first: traces have few threads, and within a thread the
  // file is nearly in time order, so each bucket sorts cheaply.
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> threads;
  for (uint32_t r = 0; r < t.size(); ++r)
    if (t.phase[r] == Phase::kComplete && is_cpu_span(t.category[r]))
      threads[{t.pid[r], t.tid[r]}].push_back(r);
  // Start time, then the longer event first so that it becomes the parent of
  // an event starting at the same instant.
  auto before = [&](uint32_t a, uint32_t b) {
    if (t.ts_ns[a] != t.ts_ns[b]) return t.ts_ns[a] < t.ts_ns[b];
    return t.dur_ns[a] > t.dur_ns[b];
  };
  std::vector<uint32_t> stack;
  for (auto& [thread, rows] : threads) {
    if (!std::is_sorted(rows.begin(), rows.end(), before)) std::sort(rows.begin(), rows.end(), before);
    stack.clear();
    for (uint32_t r : rows) {
      while (!stack.empty() && t.end_ns(stack.back()) < t.end_ns(r)) stack.pop_back();
      links.parent[r] = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
      stack.push_back(r);
    }
  }
}

}  // namespace

TraceLinks link_trace(const Trace& trace) {
  const auto& t = trace.events;
  TraceLinks links;
  links.launch_of.assign(t.size(), -1);
  links.parent.assign(t.size(), -1);
  links.op_by_external_id_row.assign(t.size(), -1);

  // The CPU-op tree needs nothing from the correlation links: build it on a
  // second thread meanwhile (both are linear passes over large traces).
  std::thread op_tree([&] { build_op_tree(trace, links); });
  struct JoinOnExit {
    std::thread& t;
    ~JoinOnExit() {
      if (t.joinable()) t.join();  // only on an exception: the normal path joins below
    }
  } join_on_exit{op_tree};

  size_t launches = 0, ops = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    launches += is_launch_api(t.category[r]) && t.correlation[r] != kNoValue;
    ops += t.category[r] == Category::kCpuOp && t.external_id[r] != kNoValue;
  }
  std::unordered_map<int64_t, int32_t> launch_by_corr;
  std::unordered_map<int64_t, int32_t> op_by_ext;
  launch_by_corr.reserve(launches);
  op_by_ext.reserve(ops);
  for (size_t r = 0; r < t.size(); ++r) {
    if (is_launch_api(t.category[r]) && t.correlation[r] != kNoValue) {
      launch_by_corr.emplace(t.correlation[r], static_cast<int32_t>(r));
    } else if (t.category[r] == Category::kCpuOp && t.external_id[r] != kNoValue) {
      op_by_ext.emplace(t.external_id[r], static_cast<int32_t>(r));
    }
  }
  std::unordered_map<int32_t, size_t> per_graph_launch;
  auto& s = links.summary;
  for (size_t r = 0; r < t.size(); ++r) {
    if (!is_gpu_activity(t.category[r])) continue;
    ++s.gpu_events;
    if (t.external_id[r] != kNoValue) {
      if (auto it = op_by_ext.find(t.external_id[r]); it != op_by_ext.end())
        links.op_by_external_id_row[r] = it->second;
    }
    if (t.correlation[r] == kNoValue) continue;
    auto it = launch_by_corr.find(t.correlation[r]);
    if (it == launch_by_corr.end()) continue;
    links.launch_of[r] = it->second;
    ++s.linked_gpu_events;
    if (is_graph_launch(trace.name(static_cast<size_t>(it->second)))) ++per_graph_launch[it->second];
  }
  s.graph_launches = per_graph_launch.size();
  for (const auto& [row, n] : per_graph_launch) {
    s.graph_kernels += n;
    s.max_kernels_per_graph_launch = std::max(s.max_kernels_per_graph_launch, n);
  }
  op_tree.join();  // before `links` is returned (moved)
  return links;
}

const TraceLinks& links_of(const Trace& trace) {
  if (!trace.links) trace.links = std::make_shared<const TraceLinks>(link_trace(trace));
  return *trace.links;
}

int32_t launching_op(const Trace& trace, const TraceLinks& links, size_t row) {
  if (links.op_by_external_id_row[row] >= 0) return links.op_by_external_id_row[row];
  int32_t r = links.launch_of[row];
  while (r >= 0) {
    if (trace.events.category[static_cast<size_t>(r)] == Category::kCpuOp) return r;
    r = links.parent[static_cast<size_t>(r)];
  }
  return -1;
}

}  // namespace magpie::trace
