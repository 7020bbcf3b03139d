#include "kernel/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace magpie::kernel {

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "FASTER";
    case Verdict::kSlower: return "SLOWER";
    case Verdict::kSame: return "SAME";
    case Verdict::kAmbiguous: return "AMBIGUOUS";
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

}  // namespace

SpeedupEstimate compare_samples(std::span<const std::vector<double>> baseline_rounds,
                                std::span<const std::vector<double>> candidate_rounds, const VerdictSettings& s) {
  const Rounds base = non_empty(baseline_rounds), cand = non_empty(candidate_rounds);
  const auto baseline = pooled(base), candidate = pooled(cand);
  SpeedupEstimate e;
  e.baseline_median = median_of(baseline);
  e.candidate_median = median_of(candidate);
  if (baseline.size() < s.min_samples || candidate.size() < s.min_samples || e.candidate_median <= 0 ||
      e.baseline_median <= 0) {
    e.speedup = e.candidate_median > 0 ? e.baseline_median / e.candidate_median : 0;
    e.ci_low = e.ci_high = e.speedup;
    e.reason = fmt::format("too few samples ({} baseline, {} candidate; need {} each)", baseline.size(),
                           candidate.size(), s.min_samples);
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
  auto at = [&](double q) {
    double pos = q * static_cast<double>(ratios.size() - 1);
    auto i = static_cast<size_t>(pos);
    double f = pos - static_cast<double>(i);
    return i + 1 < ratios.size() ? ratios[i] * (1 - f) + ratios[i + 1] * f : ratios[i];
  };
  e.ci_low = at(alpha);
  e.ci_high = at(1 - alpha);
  double up = 1 + s.threshold, down = 1 / (1 + s.threshold);
  if (e.ci_low >= down && e.ci_high <= up) {
    e.verdict = Verdict::kSame;
    e.reason = fmt::format("CI within ±{:.1f}%", s.threshold * 100);
  } else if (e.ci_low > up) {
    e.verdict = Verdict::kFaster;
    e.reason = fmt::format("CI above +{:.1f}%", s.threshold * 100);
  } else if (e.ci_high < down) {
    e.verdict = Verdict::kSlower;
    e.reason = fmt::format("CI below -{:.1f}%", s.threshold * 100);
  } else {
    e.verdict = Verdict::kAmbiguous;
    e.reason = fmt::format("CI [{:.3f}, {:.3f}] crosses the ±{:.1f}% band: more samples or a quieter GPU needed",
                           e.ci_low, e.ci_high, s.threshold * 100);
  }
  return e;
}

SpeedupEstimate compare_samples(std::span<const double> baseline, std::span<const double> candidate,
                                const VerdictSettings& s) {
  const std::vector<double> b(baseline.begin(), baseline.end()), c(candidate.begin(), candidate.end());
  return compare_samples(std::span<const std::vector<double>>(&b, 1), std::span<const std::vector<double>>(&c, 1), s);
}

}  // namespace magpie::kernel
