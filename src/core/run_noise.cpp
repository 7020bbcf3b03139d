#include "core/run_noise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace magpie::stats {

const char* to_string(NoiseBasis basis) {
  switch (basis) {
    case NoiseBasis::kWithinRunOnly:
      return "within-run only";
    case NoiseBasis::kRepeats:
      return "repeated runs";
    case NoiseBasis::kAaPair:
      return "A/A pair";
    case NoiseBasis::kGiven:
      return "given";
  }
  return "within-run only";
}

double run_spread(std::span<const double> per_run_values) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  size_t n = 0;
  for (double v : per_run_values) {
    if (!(v > 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++n;
  }
  return n < 2 ? 1.0 : hi / lo;
}

CrossRunVerdict apply_run_noise(Verdict within, double ci_low, double ci_high,
                                const std::string& within_reason, const RunNoise& noise,
                                double threshold) {
  CrossRunVerdict out{within, ci_low, ci_high, within_reason};
  if (noise.basis == NoiseBasis::kWithinRunOnly) {
    if (within == Verdict::kFaster || within == Verdict::kSlower) {
      out.verdict = Verdict::kAmbiguous;
      out.reason = fmt::format(
          "unconfirmed: {} within runs ({}), but one run a side measures no run-to-run noise: "
          "re-run to measure run-to-run noise (diff A1,A2 B1,B2) or give --run-noise",
          to_string(within), within_reason);
    } else if (within == Verdict::kSame) {
      out.reason = within_reason + " (within-run only)";
    }
    return out;
  }
  const double f = std::max(1.0, noise.floor);
  out.ci_low = ci_low / f;
  out.ci_high = ci_high * f;
  // AMBIGUOUS for a reason of its own (too few samples, a zero statistic, a thin p99) stays so.
  if (within == Verdict::kAmbiguous) return out;
  std::string why;
  out.verdict = classify(out.ci_low, out.ci_high, threshold, &why);
  out.reason = out.verdict == within
                   ? fmt::format("{}; beyond run-to-run noise x{:.3f} ({})", why, f,
                                 to_string(noise.basis))
                   : fmt::format("{} within runs, but run-to-run noise x{:.3f} ({}) widens the CI "
                                 "to [{:.3f}, {:.3f}]: {}",
                                 to_string(within), f, to_string(noise.basis), out.ci_low,
                                 out.ci_high, why);
  return out;
}

}  // namespace magpie::stats
