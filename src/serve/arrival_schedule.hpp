#pragma once
// When each request should be sent, as offsets from the run's start. Gaps are
// gamma-distributed with shape = burstiness and scale = 1/(rate·burstiness)
// (burstiness 1 = Poisson), as vLLM bench serve draws them, but placed on an
// absolute cumulative schedule: a late send does not push later ones back.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace magpie::serve {

struct ArrivalOptions {
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s
  double burstiness = 1.0;
  uint64_t seed = 0;
};

// `count` offsets in seconds, non-decreasing; all 0 when the rate is infinite.
std::vector<double> arrival_offsets(size_t count, const ArrivalOptions& options);

// Offsets up to `duration_s` (for duration-bounded runs at a finite rate).
std::vector<double> arrival_offsets_for(double duration_s, const ArrivalOptions& options);

}  // namespace magpie::serve
