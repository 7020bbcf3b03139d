#pragma once
// Run-to-run noise: the rule that turns a within-run verdict into a verdict
// between runs.
//
// A diff's bootstrap resamples requests (or rounds) inside each run, so its CI
// covers the spread between requests, not the drift between two runs of the
// same config: other load on the machine, clocks, allocator and cache state.
// On the 2-core CI machine two identical CPU vLLM runs a minute apart came out
// 27% apart in request throughput (45% in median E2EL) with CIs that excluded
// each other. Only repeated runs of one config (an A/A measurement) show that
// noise. The rule (docs/RESULTS.md, "Run-to-run noise"):
//
//   floor F >= 1   the largest ratio of a statistic between two runs of one
//                  config: over each side's repeats (A1,A2 vs B1,B2), or over
//                  all runs when baseline and candidate are runs of one config
//                  (an A/A pair); else 1 + the noise the user measured
//                  elsewhere (--run-noise); else unknown.
//   F known        the within-run CI [lo, hi] widens to [lo/F, hi*F] and the
//                  band rule (verdict.hpp) is applied again. Widening can only
//                  demote: FASTER/SLOWER -> AMBIGUOUS, SAME -> AMBIGUOUS; it
//                  never flips a direction.
//   F unknown      (one run a side) SAME and AMBIGUOUS stand, marked
//                  within-run; FASTER/SLOWER become AMBIGUOUS, "unconfirmed".
#include <span>
#include <string>

#include "core/verdict.hpp"

namespace magpie::stats {

enum class NoiseBasis {
  kWithinRunOnly,  // one run a side: run-to-run noise not measured
  kRepeats,        // a side (or both) given as repeated runs of one config
  kAaPair,         // baseline and candidate are runs of one config
  kGiven,          // --run-noise: measured elsewhere by the user
};
// "within-run only", "repeated runs", "A/A pair", "given".
const char* to_string(NoiseBasis basis);

struct RunNoise {
  NoiseBasis basis = NoiseBasis::kWithinRunOnly;
  double floor = 1;  // F >= 1; meaningful unless basis is kWithinRunOnly
};

// max/min of the positive values (one statistic, one value per run of one
// config); 1 for fewer than two positive values.
double run_spread(std::span<const double> per_run_values);

struct CrossRunVerdict {
  Verdict verdict = Verdict::kAmbiguous;
  double ci_low = 0, ci_high = 0;  // the within-run CI widened by F (as given when F unknown)
  std::string reason;
};

// The rule above. `within` is the bootstrap verdict on [ci_low, ci_high] with
// its reason; `threshold` the practical band.
CrossRunVerdict apply_run_noise(Verdict within, double ci_low, double ci_high,
                                const std::string& within_reason, const RunNoise& noise,
                                double threshold);

}  // namespace magpie::stats
