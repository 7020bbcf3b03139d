#pragma once
// Where a rank's GPU time goes, from unions of intervals (so overlapping
// streams are not double-counted): busy, idle, computation, and the parts of
// communication and memory copies that no computation hides.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/intervals.hpp"

namespace magpie::analysis {

using magpie::Interval;
using magpie::merge_intervals;
using magpie::uncovered_length;

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
