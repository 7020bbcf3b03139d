#include "core/paired_accuracy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace magpie::stats {

const char* to_string(QualityVerdict v) {
  switch (v) {
    case QualityVerdict::kBetter:
      return "BETTER";
    case QualityVerdict::kWorse:
      return "WORSE";
    case QualityVerdict::kSame:
      return "SAME";
  }
  return "SAME";
}

double binomial_cdf(size_t k, size_t n, double p) {
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  // Terms in log space: n reaches tens of thousands of items.
  const double lp = std::log(p), lq = std::log1p(-p);
  const double ln_n = std::lgamma(static_cast<double>(n) + 1);
  double sum = 0;
  for (size_t i = 0; i <= k; ++i) {
    double di = static_cast<double>(i);
    double log_term = ln_n - std::lgamma(di + 1) - std::lgamma(static_cast<double>(n - i) + 1) +
                      di * lp + static_cast<double>(n - i) * lq;
    sum += std::exp(log_term);
  }
  return std::min(1.0, sum);
}

namespace {

// Root of a monotone function on [0, 1] by bisection (the Clopper-Pearson
// bounds are beta quantiles; bisection on the binomial tail needs no beta code).
template <typename F>
double bisect(F&& decreasing_minus_target) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-12; ++i) {
    double mid = (lo + hi) / 2;
    if (decreasing_minus_target(mid) > 0)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

PairedAccuracy compare_paired_accuracy(const PairedCounts& counts, double confidence) {
  const size_t n = counts.pairs();
  if (n == 0) throw Error(ErrorKind::kUsage, "paired accuracy: no item is in both runs");
  if (!(confidence > 0 && confidence < 1))
    throw Error(ErrorKind::kUsage, fmt::format("paired accuracy: confidence {} is not in (0, 1)", confidence));
  PairedAccuracy out;
  out.counts = counts;
  out.confidence = confidence;
  const double dn = static_cast<double>(n);
  const size_t b = counts.baseline_only, c = counts.candidate_only, m = b + c;
  out.baseline_accuracy = static_cast<double>(counts.both_right + b) / dn;
  out.candidate_accuracy = static_cast<double>(counts.both_right + c) / dn;
  out.difference = (static_cast<double>(c) - static_cast<double>(b)) / dn;
  if (m == 0) {
    out.p_value = 1;
    out.reason = fmt::format("{} items, all answered alike in both runs", n);
    return out;
  }
  out.p_value = std::min(1.0, 2 * binomial_cdf(std::min(b, c), m, 0.5));
  const double alpha = 1 - confidence;
  // pL: P(X >= c | pL) = alpha/2, i.e. 1 - cdf(c-1) rises with p.
  double p_low = c == 0 ? 0 : bisect([&](double p) { return alpha / 2 - (1 - binomial_cdf(c - 1, m, p)); });
  // pU: P(X <= c | pU) = alpha/2, cdf falls with p.
  double p_high = c == m ? 1 : bisect([&](double p) { return binomial_cdf(c, m, p) - alpha / 2; });
  const double share = static_cast<double>(m) / dn;
  out.ci_low = share * (2 * p_low - 1);
  out.ci_high = share * (2 * p_high - 1);
  if (out.ci_high < 0)
    out.verdict = QualityVerdict::kWorse;
  else if (out.ci_low > 0)
    out.verdict = QualityVerdict::kBetter;
  out.reason = fmt::format(
      "{} items: {} right only in the baseline, {} only in the candidate; exact McNemar p = {:.3g}", n, b,
      c, out.p_value);
  return out;
}

}  // namespace magpie::stats
