#include "analysis/critical_path_ranks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "analysis/collective_report.hpp"

namespace magpie::analysis {

namespace {

struct Call {
  size_t rank_index;  // into traces/graphs
  int32_t node;
  int64_t start_ns, end_ns;
};

// The call of `calls` (sorted by end) whose end is nearest `end`.
const Call* nearest_end(const std::vector<Call>& calls, int64_t end) {
  auto it = std::lower_bound(calls.begin(), calls.end(), end, [](const Call& c, int64_t e) { return c.end_ns < e; });
  const Call* best = nullptr;
  if (it != calls.end()) best = &*it;
  if (it != calls.begin() && (!best || end - std::prev(it)->end_ns < best->end_ns - end)) best = &*std::prev(it);
  return best;
}

// Two calls are one collective when each is the other's nearest by end and
// the ends agree: a collective completes on every rank at about the same
// moment, however late each rank arrived. Order alone does not do: a sampled
// trace starts mid-job, and a rank takes part in groups the other does not.
int64_t tolerance_ns(const Call& a, const Call& b) {
  const int64_t shorter = std::min(a.end_ns - a.start_ns, b.end_ns - b.start_ns);
  return std::max<int64_t>(50'000, shorter / 100);
}

}  // namespace

CrossRankSummary link_ranks(const std::vector<const trace::Trace*>& traces, std::vector<DependencyGraph*>& graphs) {
  CrossRankSummary out;
  if (traces.size() < 2 || traces.size() != graphs.size()) return out;
  std::vector<std::vector<Call>> per_rank(traces.size());
  size_t total = 0;
  for (size_t r = 0; r < traces.size(); ++r) {
    CollectiveCollection collection;
    collect_collectives(*traces[r], trace::links_of(*traces[r]), static_cast<int>(r), collection);
    const DependencyGraph& g = *graphs[r];
    for (const auto& c : collection.calls) {
      if (g.node_of_gpu_row.empty() || c.row >= g.node_of_gpu_row.size()) continue;
      const int32_t node = g.node_of_gpu_row[c.row];
      if (node == kNoNode) continue;
      per_rank[r].push_back({r, node, g.start_ns[static_cast<size_t>(node)], g.end_ns[static_cast<size_t>(node)]});
    }
    std::sort(per_rank[r].begin(), per_rank[r].end(), [](const Call& a, const Call& b) { return a.end_ns < b.end_ns; });
    total += per_rank[r].size();
  }
  // The first rank with collectives is the reference; each of its calls
  // gathers the other ranks' calls that pair with it.
  size_t ref = 0;
  while (ref < per_rank.size() && per_rank[ref].empty()) ++ref;
  if (ref == per_rank.size()) return out;
  for (const Call& mine : per_rank[ref]) {
    std::vector<const Call*> group{&mine};
    for (size_t r = 0; r < per_rank.size(); ++r) {
      if (r == ref || per_rank[r].empty()) continue;
      const Call* theirs = nearest_end(per_rank[r], mine.end_ns);
      if (!theirs || std::llabs(theirs->end_ns - mine.end_ns) > tolerance_ns(mine, *theirs)) continue;
      if (nearest_end(per_rank[ref], theirs->end_ns) != &mine) continue;
      group.push_back(theirs);
    }
    if (group.size() < 2) continue;
    for (const Call* c : group) {
      int64_t others = INT64_MIN;
      for (const Call* o : group)
        if (o != c) others = std::max(others, o->start_ns);
      DependencyGraph& g = *graphs[c->rank_index];
      const auto v = static_cast<size_t>(c->node);
      // Transfer: the time it ran after every rank (itself too) had arrived;
      // its end cannot come before the last other rank's arrival plus that.
      const int64_t transfer = std::max<int64_t>(0, c->end_ns - std::max(others, c->start_ns));
      if (g.floor_end.empty()) g.floor_end.assign(g.size(), INT64_MIN);
      g.floor_end[v] = others + transfer;
      g.cost_ns[v] = transfer;
      ++g.stats.cross_rank_edges;
      ++out.matched_calls;
    }
  }
  out.unmatched_calls = total - out.matched_calls;
  if (out.matched_calls == 0) {
    out.warnings.push_back(
        "no collective kernel ends when one of another rank does: each rank's path stops at its own "
        "collectives (are these ranks of one job, on one clock?)");
  } else if (out.unmatched_calls > 0) {
    out.warnings.push_back(fmt::format(
        "{} of {} collective kernels have no partner on the other ranks given (other process groups, "
        "or a rank's trace covers a different window): they keep their recorded time",
        out.unmatched_calls, total));
  }
  return out;
}

}  // namespace magpie::analysis
