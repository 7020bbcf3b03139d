#pragma once
// Interval unions over [start, end) nanosecond ranges: the one implementation
// behind GPU busy time in gap analysis, tracelens and kernel timing.
#include <cstdint>
#include <utility>
#include <vector>

namespace magpie {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

// Sorts and merges in place; returns the total covered length.
int64_t merge_intervals(std::vector<Interval>& intervals);
// Length of `a` not covered by `b` (both merged).
int64_t uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace magpie
