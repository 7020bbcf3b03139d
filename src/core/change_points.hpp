#pragma once
// Change points along a series of measurements: E-divisive means (Matteson &
// James, "A Nonparametric Approach for Multiple Change Point Analysis of
// Multivariate Data", JASA 2014), the method MongoDB's performance CI uses
// (signal-processing-algorithms; Daly et al., ICPE 2020).
//
// For a segment y[0..m) and a split τ, the energy statistic
//   Q(τ) = τ(m−τ)/m · ( 2/(τ(m−τ)) Σ|x_i−z_j| − 1/C(τ,2) Σ|x_i−x_k| − 1/C(m−τ,2) Σ|z_j−z_k| )
// (x the left part, z the right) is large where the two parts' distributions
// differ. The best split of the segment with the largest Q is tested by
// permutation: its Q against the best Q of `permutations` shuffles of the
// segment (p = (k+1)/(P+1), k shuffles at least as large; stopped early
// both ways: once k is too large, and when none of the first 199 beat it). Significant
// (p <= alpha) splits are kept and their parts searched again; the first
// insignificant one ends the search. No distribution is assumed, so skewed
// and heavy-tailed timings are fine. Deterministic: shuffles come from a
// seeded generator of our own, the same on every platform.
//
// This finds *where* a series changes; whether a change is larger than the
// run-to-run noise is the caller's rule (store/series.hpp).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace magpie::stats {

struct ChangePointSettings {
  double alpha = 0.01;    // significance of the permutation test
  int permutations = 999;
  // A split no shuffle beats in the first `decisive` is significant without the rest: a true
  // p-value must be small for none of 199 shuffles to beat it (a p of 2% passes 1.8% of the
  // time), and the rest only matter near alpha. Clear changes cost 200 split searches, not 1000.
  int decisive = 199;
  size_t min_size = 3;    // points on each side of a change
  uint64_t seed = 42;
  size_t max_change_points = 32;
};

struct ChangePoint {
  size_t index = 0;  // the first point of the new level
  double q = 0;      // the energy statistic of the split
  double p_value = 1;
};

// Change points of `values`, ascending by index.
std::vector<ChangePoint> e_divisive(std::span<const double> values,
                                    const ChangePointSettings& settings = {});

// The best split of `values` (index in [min_size, n - min_size]) and its Q;
// {0, 0} when the series is shorter than 2·min_size. Exposed for tests.
struct Split {
  size_t index = 0;
  double q = 0;
};
Split best_split(std::span<const double> values, size_t min_size);

}  // namespace magpie::stats
