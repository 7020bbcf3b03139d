#include "analysis/gpu_timeline.hpp"

#include <algorithm>

namespace magpie::analysis {

GpuTimeline compute_gpu_timeline(std::vector<Interval> computation,
                                 std::vector<Interval> communication,
                                 std::vector<Interval> memcpy) {
  GpuTimeline t;
  std::vector<Interval> all;
  all.reserve(computation.size() + communication.size() + memcpy.size());
  all.insert(all.end(), computation.begin(), computation.end());
  all.insert(all.end(), communication.begin(), communication.end());
  all.insert(all.end(), memcpy.begin(), memcpy.end());
  if (all.empty()) return t;
  int64_t busy = merge_intervals(all);
  int64_t span = all.back().second - all.front().first;
  int64_t comp = merge_intervals(computation);
  merge_intervals(communication);
  merge_intervals(memcpy);
  int64_t exposed_comm = uncovered_length(communication, computation);
  std::vector<Interval> comp_or_comm = computation;
  comp_or_comm.insert(comp_or_comm.end(), communication.begin(), communication.end());
  merge_intervals(comp_or_comm);
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
