#include "core/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace magpie::stats {

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kFaster:
      return "FASTER";
    case Verdict::kSlower:
      return "SLOWER";
    case Verdict::kSame:
      return "SAME";
    case Verdict::kAmbiguous:
      return "AMBIGUOUS";
  }
  return "AMBIGUOUS";
}

double median_of(std::span<const double> xs) {
  if (xs.empty()) return 0;
  std::vector<double> v(xs.begin(), xs.end());
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

namespace {

using Rounds = std::vector<std::span<const double>>;

Rounds non_empty(std::span<const std::vector<double>> rounds) {
  Rounds out;
  for (const auto& r : rounds) {
    if (!r.empty()) out.emplace_back(r);
  }
  return out;
}

std::vector<double> pooled(const Rounds& rounds) {
  std::vector<double> all;
  for (auto r : rounds) all.insert(all.end(), r.begin(), r.end());
  return all;
}

// Median of a two-level resample of `rounds` (rounds with replacement, then
// samples with replacement within each), into scratch buffer `buf`. One round
// draws no round index, so an ungrouped call draws exactly what a plain
// bootstrap of its samples draws.
double resampled_median(const Rounds& rounds, std::mt19937_64& rng, std::vector<double>& buf) {
  buf.clear();
  std::uniform_int_distribution<size_t> pick_round(0, rounds.size() - 1);
  for (size_t i = 0; i < rounds.size(); ++i) {
    auto r = rounds.size() == 1 ? rounds[0] : rounds[pick_round(rng)];
    std::uniform_int_distribution<size_t> pick(0, r.size() - 1);
    for (size_t j = 0; j < r.size(); ++j) buf.push_back(r[pick(rng)]);
  }
  return median_of(buf);
}

// Linear-interpolated quantile of an ascending vector.
double quantile_sorted(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto i = static_cast<size_t>(pos);
  double f = pos - static_cast<double>(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

}  // namespace

Verdict classify(double ci_low, double ci_high, double threshold, std::string* reason) {
  double up = 1 + threshold, down = 1 / (1 + threshold);
  Verdict v = Verdict::kAmbiguous;
  std::string why;
  if (ci_low >= down && ci_high <= up) {
    v = Verdict::kSame;
    why = fmt::format("CI within ±{:.1f}%", threshold * 100);
  } else if (ci_low > up) {
    v = Verdict::kFaster;
    why = fmt::format("CI above +{:.1f}%", threshold * 100);
  } else if (ci_high < down) {
    v = Verdict::kSlower;
    why = fmt::format("CI below -{:.1f}%", threshold * 100);
  } else {
    why = fmt::format(
        "CI [{:.3f}, {:.3f}] crosses the ±{:.1f}% band: more samples or a quieter GPU needed",
        ci_low, ci_high, threshold * 100);
  }
  if (reason) *reason = std::move(why);
  return v;
}

SpeedupEstimate compare_samples(std::span<const std::vector<double>> baseline_rounds,
                                std::span<const std::vector<double>> candidate_rounds,
                                const VerdictSettings& s) {
  const Rounds base = non_empty(baseline_rounds), cand = non_empty(candidate_rounds);
  const auto baseline = pooled(base), candidate = pooled(cand);
  SpeedupEstimate e;
  e.baseline_median = median_of(baseline);
  e.candidate_median = median_of(candidate);
  if (baseline.size() < s.min_samples || candidate.size() < s.min_samples ||
      e.candidate_median <= 0 || e.baseline_median <= 0) {
    e.speedup = e.candidate_median > 0 ? e.baseline_median / e.candidate_median : 0;
    e.ci_low = e.ci_high = e.speedup;
    e.reason = fmt::format("too few samples ({} baseline, {} candidate; need {} each)",
                           baseline.size(), candidate.size(), s.min_samples);
    return e;
  }
  e.speedup = e.baseline_median / e.candidate_median;
  std::mt19937_64 rng(s.seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(s.resamples));
  std::vector<double> buf;
  for (int i = 0; i < s.resamples; ++i) {
    double b = resampled_median(base, rng, buf);
    double c = resampled_median(cand, rng, buf);
    ratios.push_back(c > 0 ? b / c : 0);
  }
  std::sort(ratios.begin(), ratios.end());
  double alpha = (1 - s.confidence) / 2;
  e.ci_low = quantile_sorted(ratios, alpha);
  e.ci_high = quantile_sorted(ratios, 1 - alpha);
  e.verdict = classify(e.ci_low, e.ci_high, s.threshold, &e.reason);
  return e;
}

SpeedupEstimate compare_samples(std::span<const double> baseline, std::span<const double> candidate,
                                const VerdictSettings& s) {
  const std::vector<double> b(baseline.begin(), baseline.end()),
      c(candidate.begin(), candidate.end());
  return compare_samples(std::span<const std::vector<double>>(&b, 1),
                         std::span<const std::vector<double>>(&c, 1), s);
}

std::vector<RatioEstimate> compare_statistics(const StatisticSide& baseline,
                                              const StatisticSide& candidate,
                                              std::span<const StatisticSpec> specs,
                                              const VerdictSettings& s) {
  const size_t k = specs.size();
  std::vector<RatioEstimate> out(k);
  if (k == 0) return out;
  auto oriented = [&](size_t i, double b, double c) {
    if (b <= 0 || c <= 0) return 0.0;
    return specs[i].higher_is_better ? c / b : b / c;
  };
  std::vector<size_t> all_b(baseline.units), all_c(candidate.units);
  for (size_t i = 0; i < all_b.size(); ++i) all_b[i] = i;
  for (size_t i = 0; i < all_c.size(); ++i) all_c[i] = i;
  std::vector<double> vb(k, 0.0), vc(k, 0.0);
  if (baseline.units) baseline.compute(all_b, false, vb);
  if (candidate.units) candidate.compute(all_c, false, vc);
  const bool too_few = baseline.units < s.min_samples || candidate.units < s.min_samples;
  for (size_t i = 0; i < k; ++i) {
    auto& e = out[i];
    e.baseline = vb[i];
    e.candidate = vc[i];
    e.ratio = e.ci_low = e.ci_high = oriented(i, vb[i], vc[i]);
    if (too_few) {
      e.reason = fmt::format("too few samples ({} baseline, {} candidate; need {} each)",
                             baseline.units, candidate.units, s.min_samples);
    } else if (e.ratio <= 0) {
      e.reason = "statistic is zero or missing on one side: no ratio";
    }
  }
  if (too_few) return out;
  std::mt19937_64 rng(s.seed);
  std::uniform_int_distribution<size_t> pick_b(0, baseline.units - 1),
      pick_c(0, candidate.units - 1);
  std::vector<std::vector<double>> ratios(k);
  for (auto& r : ratios) r.reserve(static_cast<size_t>(s.resamples));
  std::vector<size_t> picks_b(baseline.units), picks_c(candidate.units);
  for (int r = 0; r < s.resamples; ++r) {
    for (auto& p : picks_b) p = pick_b(rng);
    for (auto& p : picks_c) p = pick_c(rng);
    std::fill(vb.begin(), vb.end(), 0.0);
    std::fill(vc.begin(), vc.end(), 0.0);
    baseline.compute(picks_b, true, vb);
    candidate.compute(picks_c, true, vc);
    for (size_t i = 0; i < k; ++i) ratios[i].push_back(oriented(i, vb[i], vc[i]));
  }
  const double alpha = (1 - s.confidence) / 2;
  for (size_t i = 0; i < k; ++i) {
    auto& e = out[i];
    if (e.ratio <= 0) continue;
    std::sort(ratios[i].begin(), ratios[i].end());
    e.ci_low = quantile_sorted(ratios[i], alpha);
    e.ci_high = quantile_sorted(ratios[i], 1 - alpha);
    e.verdict = classify(e.ci_low, e.ci_high, s.threshold, &e.reason);
  }
  return out;
}

}  // namespace magpie::stats
