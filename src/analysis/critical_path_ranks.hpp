#pragma once
// Cross-rank edges for collectives: a collective kernel cannot finish before
// the last rank has arrived at it. After each rank's dependency graph is
// built, the collectives of the ranks are matched (the i-th call of a group
// and kind on each rank, with the order offset whose completions agree), and
// each matched kernel gets a floor on its end: the latest start among the
// other ranks' calls plus its own transfer time (the time it ran after every
// rank had arrived). Its cost becomes that transfer time. Re-timing one rank
// then keeps the other ranks as recorded: work that makes this rank arrive
// earlier only lengthens its wait unless it was the last to arrive, and the
// `wait:0` scenario shows what the rank would gain if the others arrived with
// it. docs/CRITICAL_PATH.md, "Across ranks".
#include <string>
#include <vector>

#include "analysis/critical_path_graph.hpp"
#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

struct CrossRankSummary {
  size_t matched_calls = 0;    // kernels given a floor, all ranks
  size_t unmatched_calls = 0;  // collective kernels left without one
  std::vector<std::string> warnings;
};

// graphs[i] belongs to traces[i]; their clocks are taken as one (Kineto's are
// the host's wall clock: ranks on one host agree, hosts may be skewed).
CrossRankSummary link_ranks(const std::vector<const trace::Trace*>& traces, std::vector<DependencyGraph*>& graphs);

}  // namespace magpie::analysis
