#pragma once
// Summary statistics shared by reports: the same definitions everywhere so a
// "p99" in a gap analysis means what it means in a serving benchmark.
#include <span>
#include <vector>

namespace magpie::stats {

double mean(std::span<const double> xs);
// Sample standard deviation (n-1), 0 for fewer than two values (as Python's statistics.stdev
// is undefined there and Magpie reports 0).
double stddev(std::span<const double> xs);
// Percentile with linear interpolation between closest ranks (numpy's default).
// `sorted` must be ascending; p in [0, 100].
double percentile_sorted(std::span<const double> sorted, double p);
double median_sorted(std::span<const double> sorted);
// The same percentile of unsorted values in O(n) (selection, not a sort); reorders `values`.
// For bootstrap loops that need a percentile of every resample.
double percentile_select(std::span<double> values, double p);

struct Summary {
  size_t count = 0;
  double sum = 0, mean = 0, stddev = 0, min = 0, max = 0, median = 0, p90 = 0, p95 = 0, p99 = 0;
};
// Sorts `values` in place.
Summary summarize(std::vector<double>& values);

}  // namespace magpie::stats
