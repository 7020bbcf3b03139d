#pragma once
// What the optimization loop should work on, by predicted end-to-end gain:
// one rank's critical path summarised (whole window and median step), the
// per-op gain bounds and the host-side what-ifs (launch:0, sync:0, cpu:2x),
// ranked into recommendations. Gap analysis, `magpie replay --top-k` and MCP
// `suggest_optimizations` all read these, so they agree on what comes first:
// on a host-bound trace (CPU-, launch- or sync-bound, or GPU busy < 50%) the
// host fix with its predicted gain; on a GPU-bound one the op whose GPU work
// buys most. docs/OPTIMIZATION_LOOP.md shows the decision.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/critical_path.hpp"
#include "analysis/critical_path_whatif.hpp"

namespace magpie::analysis {

struct PathWindowSummary {
  std::string label, stage;
  int64_t length_ns = 0;
  std::array<int64_t, kPathCategories> by_category{};
};

// A whole-trace what-if that removes host-side time, and the class of fix it stands for.
struct HostFix {
  std::string scenario;  // "launch:0", "sync:0", "cpu:2x"
  std::string kind;      // "launch", "sync", "cpu"
  std::string fix;       // "CUDA graphs / fewer launches", ...
  size_t matched = 0;
  int64_t before_ns = 0;  // iterations (or the whole window) as recorded
  int64_t gain_ns = 0;
};

struct CriticalPathSummary {
  std::string bound;          // CriticalPathReport::bound
  double gpu_busy_pct = 0;    // union of GPU work over the whole window
  size_t iterations = 0;
  PathWindowSummary whole;
  std::optional<PathWindowSummary> median_step;  // the iteration of median length
  std::vector<NameShare> ops;                     // top ops by critical-path time
  int64_t gpu_total_ns = 0;                       // all GPU work (kernel share's whole)
  std::vector<OpGainBound> bounds;
  std::vector<HostFix> host_fixes;  // launch:0, sync:0, cpu:2x, in that order
  // Ops asked for by name: the end-to-end gain with the GPU work launched
  // inside them (any depth) at zero (scenario op:NAME:inf).
  std::vector<std::pair<std::string, int64_t>> named_gpu_gains;
  std::vector<std::string> warnings;
  // CPU-, launch- or sync-bound, or the GPU busy less than half the window.
  bool host_bound() const;
};

// Builds the graph once on the ingested trace and summarises it; nullopt when
// the trace has no GPU work. `bound_ops`: ops per side with a gain bound.
// `window_ns`: a time range (gap analysis's --start-pct/--end-pct); only the
// iterations inside it count (the whole-window figures stay the whole trace's,
// and a warning says so).
struct TimeRange {
  int64_t begin_ns = INT64_MIN, end_ns = INT64_MAX;
  bool all() const { return begin_ns == INT64_MIN && end_ns == INT64_MAX; }
};
std::optional<CriticalPathSummary> summarize_critical_path(const trace::Trace& trace,
                                                           const trace::TraceLinks& links,
                                                           size_t bound_ops = 10, size_t top_ops = 10,
                                                           const std::vector<std::string>& named_ops = {},
                                                           TimeRange window_ns = {});
// The same from parts already built (magpie whatif has them).
CriticalPathSummary summarize_critical_path(const trace::Trace& trace, const DependencyGraph& g,
                                            const std::vector<PathWindow>& windows,
                                            const CriticalPathReport& report,
                                            std::vector<OpGainBound> bounds, size_t top_ops = 10);

struct Recommendation {
  std::string kind;    // "launch", "sync", "cpu" (host fixes) or "kernel" (an op's GPU work)
  std::string target;  // the scenario ("launch:0") or the op name
  std::string fix;     // the class of fix, in words
  int64_t gain_ns = 0;    // predicted end-to-end gain (kernel: upper bound, its GPU work at zero)
  double gain_pct = 0;    // of the iterations (or the whole window)
  int kernel_rank = 0;    // kernel: 1 = most GPU time among the ops; 0 for host fixes
  int64_t kernel_ns = 0;  // kernel: the op's GPU time
};

// Host fixes first on a host-bound trace, kernel work first otherwise; each
// side by predicted gain. Entries without a gain are left out.
std::vector<Recommendation> rank_recommendations(const CriticalPathSummary& summary);

// The critical-path section of gap_analysis.json (and of replay.json):
// {bound, gpu_busy_pct, host_bound, whole, median_step, ops, gain_bounds,
//  host_fixes, recommendations, warnings}.
nlohmann::json to_json(const CriticalPathSummary& summary);
nlohmann::json to_json(const Recommendation& r);
// The gain bounds as critical_path.json and gap_analysis.json list them.
nlohmann::json to_json(const std::vector<OpGainBound>& bounds);

// One line for a console: "launch-bound (GPU busy 3%): first fix launch:0 —
// CUDA graphs / fewer launches, predicted gain 1.2 ms (40%)".
std::string headline(const CriticalPathSummary& summary);

}  // namespace magpie::analysis
