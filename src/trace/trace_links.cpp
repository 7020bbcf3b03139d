#include "trace/trace_links.hpp"

#include <algorithm>
#include <cstdint>
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

// One CPU span, with its sort key beside it: sorting these is several times
// faster than sorting row numbers through the columns.
struct Span {
  int64_t ts;
  int64_t end;
  uint32_t row;
  // Start time, then the longer event first so that it becomes the parent of
  // an event starting at the same instant; then file order.
  bool operator<(const Span& o) const {
    if (ts != o.ts) return ts < o.ts;
    if (end != o.end) return end > o.end;
    return row < o.row;
  }
};

// A thread's spans come as a few ascending runs (in file order each copy of a
// profiling cycle is in time order; a jump back starts the next run): merging
// the runs is linear per pass and needs log2(runs) passes, where a full sort
// of a large trace's hundreds of thousands of ops cost more than the rest of
// the links. Many runs: sorted outright.
void sort_spans(std::vector<Span>& v) {
  constexpr size_t kMaxRuns = 1024;
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) {
      bounds.push_back(i);
      if (bounds.size() > kMaxRuns) {
        std::sort(v.begin(), v.end());
        return;
      }
    }
  }
  bounds.push_back(v.size());
  while (bounds.size() > 2) {  // runs = bounds.size() - 1
    std::vector<size_t> merged{0};
    const size_t runs = bounds.size() - 1;
    for (size_t k = 0; k + 1 < runs; k += 2) {
      std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(bounds[k]),
                         v.begin() + static_cast<std::ptrdiff_t>(bounds[k + 1]),
                         v.begin() + static_cast<std::ptrdiff_t>(bounds[k + 2]));
      merged.push_back(bounds[k + 2]);
    }
    if (runs % 2 == 1) merged.push_back(bounds[runs]);  // the last run waits for the next pass
    bounds = std::move(merged);
  }
}

using ThreadKey = std::pair<int64_t, int64_t>;  // pid, tid

// Calls add(by_thread[its thread], row) for every complete CPU span. Traces
// have few threads, and the last one looked up is the next row's thread
// almost always.
template <class ByThread, class Add>
void for_each_thread_span(const EventTable& t, ByThread& by_thread, Add&& add) {
  ThreadKey last_key{INT64_MIN, INT64_MIN};
  typename ByThread::mapped_type* last = nullptr;
  for (uint32_t r = 0; r < t.size(); ++r) {
    if (t.phase[r] != Phase::kComplete || !is_cpu_span(t.category[r])) continue;
    ThreadKey key{t.pid[r], t.tid[r]};
    if (!last || key != last_key) {
      last = &by_thread[key];
      last_key = key;
    }
    add(*last, r);
  }
}

void build_op_tree(const Trace& trace, TraceLinks& links) {
  const auto& t = trace.events;
  // Spans bucketed by thread, counted first so that each thread's are written
  // once into room made for them (growing by doubling copied ~20 MB more).
  std::map<ThreadKey, size_t> counts;
  for_each_thread_span(t, counts, [](size_t& n, uint32_t) { ++n; });
  std::map<ThreadKey, std::vector<Span>> threads;
  for (const auto& [key, n] : counts) threads[key].reserve(n);
  for_each_thread_span(t, threads, [&](std::vector<Span>& spans, uint32_t r) {
    spans.push_back({t.ts_ns[r], t.end_ns(r), r});
  });
  std::vector<uint32_t> stack;
  for (auto& [thread, spans] : threads) {
    sort_spans(spans);
    stack.clear();
    for (const Span& s : spans) {
      while (!stack.empty() && t.end_ns(stack.back()) < s.end) stack.pop_back();
      links.parent[s.row] = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
      stack.push_back(s.row);
    }
  }
}

// Joins GPU rows to the rows that carry the same id (correlation → launch,
// External id → cpu_op) by sorting both sides and walking them together: the
// passes are sequential, where a hash table's probes missed the cache on
// nearly every row of a large trace (15 ms of the links on the bench trace).
// Profilers hand out both ids from counters, so each side is usually in
// order already and only checked. The first row carrying an id keeps it.
using IdRow = std::pair<int64_t, int32_t>;

void sort_if_needed(std::vector<IdRow>& v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
}

// For each (id, gpu row) of `wanted`, out[gpu row] = the first row of `have` with that id.
void join_ids(std::vector<IdRow>& have, std::vector<IdRow>& wanted, std::vector<int32_t>& out) {
  sort_if_needed(have);
  sort_if_needed(wanted);
  size_t h = 0;
  for (const auto& [id, row] : wanted) {
    while (h < have.size() && have[h].first < id) ++h;
    if (h < have.size() && have[h].first == id) out[static_cast<size_t>(row)] = have[h].second;
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

  std::vector<IdRow> launches, ops, gpu_by_corr, gpu_by_ext;
  for (size_t r = 0; r < t.size(); ++r) {
    const auto row = static_cast<int32_t>(r);
    if (is_gpu_activity(t.category[r])) {
      if (t.correlation[r] != kNoValue) gpu_by_corr.emplace_back(t.correlation[r], row);
      if (t.external_id[r] != kNoValue) gpu_by_ext.emplace_back(t.external_id[r], row);
    } else if (is_launch_api(t.category[r]) && t.correlation[r] != kNoValue) {
      launches.emplace_back(t.correlation[r], row);
    } else if (t.category[r] == Category::kCpuOp && t.external_id[r] != kNoValue) {
      ops.emplace_back(t.external_id[r], row);
    }
  }
  join_ids(launches, gpu_by_corr, links.launch_of);
  join_ids(ops, gpu_by_ext, links.op_by_external_id_row);
  std::unordered_map<int32_t, size_t> per_graph_launch;
  auto& s = links.summary;
  for (size_t r = 0; r < t.size(); ++r) {
    if (!is_gpu_activity(t.category[r])) continue;
    ++s.gpu_events;
    const int32_t launch = links.launch_of[r];
    if (launch < 0) continue;
    ++s.linked_gpu_events;
    if (is_graph_launch(trace.name(static_cast<size_t>(launch)))) ++per_graph_launch[launch];
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
