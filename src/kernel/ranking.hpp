#pragma once
// Ranks measured implementations by median time and sets each candidate
// against the explicit baseline with a bootstrap CI and a verdict. Failed
// candidates are listed with their reason and never ranked.
#include <optional>
#include <string>
#include <vector>

#include "kernel/evaluation.hpp"
#include "kernel/verdict.hpp"

namespace magpie::kernel {

struct RankedRow {
  size_t index = 0;
  std::string id;
  bool eligible = false;          // correct and measured
  std::string reason;             // why not eligible: the deciding stage's one-line cause
  std::string fix;                // how to fix it, when known
  double median_ns = 0;
  double cv = 0;                  // stddev / mean of the pooled samples
  size_t samples = 0;
  std::optional<size_t> rank;     // 1 = fastest
  std::optional<SpeedupEstimate> vs_baseline;  // candidates only, when both measured
};

struct Ranking {
  size_t baseline = 0;
  std::vector<RankedRow> rows;                       // in input order
  std::vector<std::pair<size_t, double>> rankings;   // [index, score], best first (Magpie's shape)
  std::optional<size_t> winner;
  bool any_regression = false;                       // a candidate SLOWER than the baseline
  std::string summary;
};

Ranking rank_evaluations(const std::vector<Evaluation>& evals, size_t baseline, const VerdictSettings& settings);

}  // namespace magpie::kernel
