#include "analysis/gpu_timeline.hpp"

#include <algorithm>
#include <iterator>

namespace magpie::analysis {

GpuTimeline compute_gpu_timeline(std::vector<Interval> computation,
                                 std::vector<Interval> communication,
                                 std::vector<Interval> memcpy) {
  GpuTimeline t;
  if (computation.empty() && communication.empty() && memcpy.empty()) return t;
  // Each kind merged on its own, then the unions of merged (sorted, disjoint)
  // lists: merging sorted lists is linear, where sorting all work again was not.
  int64_t comp = merge_intervals(computation);
  merge_intervals(communication);
  merge_intervals(memcpy);
  std::vector<Interval> comp_or_comm;
  comp_or_comm.reserve(computation.size() + communication.size());
  std::merge(computation.begin(), computation.end(), communication.begin(), communication.end(),
             std::back_inserter(comp_or_comm));
  merge_intervals(comp_or_comm);
  std::vector<Interval> all;
  all.reserve(comp_or_comm.size() + memcpy.size());
  std::merge(comp_or_comm.begin(), comp_or_comm.end(), memcpy.begin(), memcpy.end(), std::back_inserter(all));
  int64_t busy = merge_intervals(all);
  int64_t span = all.back().second - all.front().first;
  int64_t exposed_comm = uncovered_length(communication, computation);
  int64_t exposed_copy = uncovered_length(memcpy, comp_or_comm);
  constexpr double kUs = 1e-3;
  t.span_us = static_cast<double>(span) * kUs;
  t.busy_us = static_cast<double>(busy) * kUs;
  t.idle_us = static_cast<double>(span - busy) * kUs;
  t.computation_us = static_cast<double>(comp) * kUs;
  t.exposed_communication_us = static_cast<double>(exposed_comm) * kUs;
  t.exposed_memcpy_us = static_cast<double>(exposed_copy) * kUs;
  return t;
}

}  // namespace magpie::analysis
