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

void build_op_tree(const Trace& trace, TraceLinks& links) {
  const auto& t = trace.events;
  // Bucket by thread first: traces have few threads (the last one looked up
  // is the next row's thread almost always).
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> threads;
  std::pair<int64_t, int64_t> last_key{INT64_MIN, INT64_MIN};
  std::vector<Span>* last = nullptr;
  for (uint32_t r = 0; r < t.size(); ++r) {
    if (t.phase[r] != Phase::kComplete || !is_cpu_span(t.category[r])) continue;
    std::pair<int64_t, int64_t> key{t.pid[r], t.tid[r]};
    if (!last || key != last_key) {
      last = &threads[key];
      last_key = key;
    }
    last->push_back({t.ts_ns[r], t.end_ns(r), r});
  }
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

// Id → row for correlation and external ids: open addressing over two flat
// arrays (std::unordered_map allocates a node per id; a large trace has
// hundreds of thousands). The first row given an id keeps it.
class IdRowIndex {
 public:
  explicit IdRowIndex(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    ids_.resize(cap);
    rows_.assign(cap, -1);
    mask_ = cap - 1;
  }
  void insert(int64_t id, int32_t row) {
    for (size_t i = slot(id);; i = (i + 1) & mask_) {
      if (rows_[i] < 0) {
        ids_[i] = id;
        rows_[i] = row;
        return;
      }
      if (ids_[i] == id) return;
    }
  }
  int32_t find(int64_t id) const {
    for (size_t i = slot(id); rows_[i] >= 0; i = (i + 1) & mask_)
      if (ids_[i] == id) return rows_[i];
    return -1;
  }

 private:
  size_t slot(int64_t id) const {
    uint64_t h = static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 32)) & mask_;
  }
  std::vector<int64_t> ids_;
  std::vector<int32_t> rows_;
  size_t mask_ = 0;
};

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
  IdRowIndex launch_by_corr(launches);
  IdRowIndex op_by_ext(ops);
  for (size_t r = 0; r < t.size(); ++r) {
    if (is_launch_api(t.category[r]) && t.correlation[r] != kNoValue) {
      launch_by_corr.insert(t.correlation[r], static_cast<int32_t>(r));
    } else if (t.category[r] == Category::kCpuOp && t.external_id[r] != kNoValue) {
      op_by_ext.insert(t.external_id[r], static_cast<int32_t>(r));
    }
  }
  std::unordered_map<int32_t, size_t> per_graph_launch;
  auto& s = links.summary;
  for (size_t r = 0; r < t.size(); ++r) {
    if (!is_gpu_activity(t.category[r])) continue;
    ++s.gpu_events;
    if (t.external_id[r] != kNoValue) {
      if (int32_t op = op_by_ext.find(t.external_id[r]); op >= 0) links.op_by_external_id_row[r] = op;
    }
    if (t.correlation[r] == kNoValue) continue;
    const int32_t launch = launch_by_corr.find(t.correlation[r]);
    if (launch < 0) continue;
    links.launch_of[r] = launch;
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
