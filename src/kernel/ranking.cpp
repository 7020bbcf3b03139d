#include "kernel/ranking.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/statistics.hpp"

namespace magpie::kernel {

Ranking rank_evaluations(const std::vector<Evaluation>& evals, size_t baseline, const VerdictSettings& settings) {
  Ranking r;
  r.baseline = baseline;
  for (const auto& e : evals) {
    RankedRow row;
    row.index = e.index;
    row.id = e.spec.id;
    auto samples = e.samples_ns();
    // The reason is the failed stage's cause (one line), not the command that failed.
    auto why = [](const StageResult& st, size_t cut) {
      return !st.cause.empty() ? st.cause : st.errors.empty() ? std::string() : st.errors.front().substr(0, cut);
    };
    if (e.compiling.state == StageState::kFailed) {
      row.reason = e.compiling.cause.empty() ? "compile failed" : "compile failed: " + e.compiling.cause;
      row.fix = e.compiling.fix;
    } else if (!e.correct()) {
      row.reason = e.correctness.errors.empty() && e.correctness.cause.empty() ? "correctness not SUCCESS"
                                                                              : "incorrect: " + why(e.correctness, 160);
      row.fix = e.correctness.fix;
    } else if (!e.measured()) {
      row.reason = why(e.performance, 200);
      if (row.reason.empty()) row.reason = "not measured";
      row.fix = e.performance.fix;
    } else {
      row.eligible = true;
      row.samples = samples.size();
      row.median_ns = median_of(samples);
      double m = stats::mean(samples);
      row.cv = m > 0 ? stats::stddev(samples) / m : 0;
    }
    r.rows.push_back(std::move(row));
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    if (r.rows[i].eligible) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.rows[a].median_ns < r.rows[b].median_ns; });
  for (size_t k = 0; k < order.size(); ++k) r.rows[order[k]].rank = k + 1;
  bool base_ok = baseline < r.rows.size() && r.rows[baseline].eligible;
  if (base_ok) {
    // By round, so that drift between rounds widens the CI (two-level bootstrap).
    auto base_rounds = evals[baseline].samples_by_round();
    for (size_t i = 0; i < r.rows.size(); ++i) {
      if (i == baseline || !r.rows[i].eligible) continue;
      auto cand_rounds = evals[i].samples_by_round();
      r.rows[i].vs_baseline = compare_samples(base_rounds, cand_rounds, settings);
      if (r.rows[i].vs_baseline->verdict == Verdict::kSlower) r.any_regression = true;
    }
  }
  // Magpie's rankings carry a score in [0, 1]: here the fastest median over each median.
  double best = order.empty() ? 0 : r.rows[order.front()].median_ns;
  for (size_t i : order) r.rankings.emplace_back(i, r.rows[i].median_ns > 0 ? best / r.rows[i].median_ns : 0);
  if (!order.empty()) {
    size_t fastest = order.front();
    // A winner other than the baseline must be FASTER beyond noise; otherwise
    // the baseline keeps the title (when it is eligible).
    if (base_ok && fastest != baseline) {
      const auto& v = r.rows[fastest].vs_baseline;
      r.winner = (v && v->verdict == Verdict::kFaster) ? fastest : baseline;
    } else {
      r.winner = fastest;
    }
  }
  if (!base_ok) {
    r.summary = fmt::format("baseline {} is not measured ({}): no verdicts", baseline,
                            baseline < r.rows.size() ? r.rows[baseline].reason : "out of range");
  } else if (r.winner && *r.winner != baseline) {
    const auto& v = *r.rows[*r.winner].vs_baseline;
    r.summary = fmt::format("{} is FASTER than baseline {}: speedup {:.3f}x (95% CI {:.3f}-{:.3f})",
                            r.rows[*r.winner].id, r.rows[baseline].id, v.speedup, v.ci_low, v.ci_high);
  } else {
    r.summary = fmt::format("no candidate is faster than baseline {} beyond noise", r.rows[baseline].id);
  }
  return r;
}

}  // namespace magpie::kernel
