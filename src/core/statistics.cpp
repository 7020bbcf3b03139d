#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace magpie::stats {

double mean(std::span<const double> xs) {
  if (xs.empty()) return 0.0;
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

double stddev(std::span<const double> xs) {
  if (xs.size() < 2) return 0.0;
  double m = mean(xs), ss = 0.0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double median_sorted(std::span<const double> sorted) { return percentile_sorted(sorted, 50.0); }

double percentile_select(std::span<double> values, double p) {
  if (values.empty()) return 0.0;
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  auto lo_it = values.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(values.begin(), lo_it, values.end());
  double frac = rank - static_cast<double>(lo);
  if (frac == 0.0 || lo + 1 >= values.size()) return *lo_it;
  double hi = *std::min_element(lo_it + 1, values.end());  // the next rank: smallest above lo
  return *lo_it + (hi - *lo_it) * frac;
}

Summary summarize(std::vector<double>& values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.sum = std::accumulate(values.begin(), values.end(), 0.0);
  s.mean = s.sum / static_cast<double>(s.count);
  s.stddev = stddev(values);
  s.min = values.front();
  s.max = values.back();
  s.median = median_sorted(values);
  s.p90 = percentile_sorted(values, 90);
  s.p95 = percentile_sorted(values, 95);
  s.p99 = percentile_sorted(values, 99);
  return s;
}

}  // namespace magpie::stats
