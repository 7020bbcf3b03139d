#pragma once
// Where a rank's GPU time goes, from unions of intervals (so overlapping
// streams are not double-counted): busy, idle, computation, and the parts of
// communication and memory copies that no computation hides.
#include <cstdint>
#include <utility>
#include <vector>

namespace magpie::analysis {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

// Sorts and merges in place; returns the total covered length.
int64_t merge_intervals(std::vector<Interval>& intervals);
// Length of `a` not covered by `b` (both merged).
int64_t uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

struct GpuTimeline {
  double span_us = 0;  // first GPU event start → last GPU event end
  double busy_us = 0;  // union of all GPU activity
  double idle_us = 0;  // span − busy
  double computation_us = 0;           // union of kernels other than communication and copies
  double exposed_communication_us = 0; // communication not overlapped by computation
  double exposed_memcpy_us = 0;        // copies/sets not overlapped by computation or communication
};

GpuTimeline compute_gpu_timeline(std::vector<Interval> computation,
                                 std::vector<Interval> communication,
                                 std::vector<Interval> memcpy);

}  // namespace magpie::analysis
