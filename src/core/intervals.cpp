#include "core/intervals.hpp"

#include <algorithm>

namespace magpie {

int64_t merge_intervals(std::vector<Interval>& v) {
  if (v.empty()) return 0;
  // GPU work is mostly written in time order: checking is a fraction of sorting.
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  size_t out = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].first <= v[out].second) {
      v[out].second = std::max(v[out].second, v[i].second);
    } else {
      v[++out] = v[i];
    }
  }
  v.resize(out + 1);
  int64_t total = 0;
  for (const auto& [b, e] : v) total += e - b;
  return total;
}

int64_t uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t j = 0;
  for (auto [start, end] : a) {
    int64_t cursor = start;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (size_t k = j; k < b.size() && b[k].first < end; ++k) {
      if (b[k].first > cursor) total += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
      if (cursor >= end) break;
    }
    if (cursor < end) total += end - cursor;
  }
  return total;
}

}  // namespace magpie
