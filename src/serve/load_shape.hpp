#pragma once
// Load ramps: the offered load changes during one case, linearly or in equal
// steps, and the report splits the case into windows (each step, or `steps`
// equal slices of a linear ramp) with the metrics and SLO verdict of the
// requests scheduled in each.
//   --rate-ramp (client.rate_ramp): the request rate (req/s), open loop.
//   --concurrency-ramp (client.concurrency_ramp): the cap on requests in
//     flight (whole numbers), closed loop: a freed slot is refilled at once
//     while the cap allows, for SECONDS.
//
//   linear:FROM,TO,SECONDS[,WINDOWS]   FROM -> TO over SECONDS (WINDOWS default 10)
//   steps:FROM,TO,SECONDS,N            N equal steps from FROM to TO (each SECONDS/N long)
//
// Arrivals keep --burstiness: unit-rate gamma gaps placed in "operational
// time" (the integral of the rate), so the schedule is a gamma process whose
// rate follows the ramp; like every schedule it is absolute (a late send does
// not push later ones back).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "serve/request_record.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/slo.hpp"

namespace magpie::serve {

struct LoadRamp {
  std::string text;          // as written
  bool steps = false;        // false: linear
  bool concurrency = false;  // false: a rate ramp
  double from = 0, to = 0, duration_s = 0;
  int64_t windows = 10;  // steps: N
};
using RateRamp = LoadRamp;

// Throw Error(kUsage) naming `option` and the accepted form.
RateRamp parse_rate_ramp(const std::string& text, const std::string& option);
LoadRamp parse_concurrency_ramp(const std::string& text, const std::string& option);

// A concurrency ramp's cap as (from second, requests in flight), first at 0:
// a step's value rounded, or a linear ramp's value rounded to the nearest whole.
std::vector<std::pair<double, int64_t>> concurrency_changes(const LoadRamp& r);
int64_t ramp_peak_concurrency(const LoadRamp& r);

// The offered rate at `t` seconds (steps: the step's rate).
double ramp_rate_at(const RateRamp& r, double t);

// Send offsets for the whole ramp (seconds from the case's start).
std::vector<double> ramp_schedule(const RateRamp& r, double burstiness, uint64_t seed);

struct RampWindow {
  double from_s = 0, to_s = 0;
  double offered_rate = 0;  // rate ramp: the mean of the ramp's rate over the window
  // Concurrency ramp: the cap's mean over the window, and the requests the
  // client really had in flight (each request's start to its end, averaged).
  double target_concurrency = 0, mean_in_flight = 0;
  ServingMetrics metrics;  // of the requests scheduled in the window
  std::optional<SloResult> slo;
};

// The windows of a finished case: each one's requests (by scheduled send time)
// through the report's own metrics, and the SLO terms when given.
std::vector<RampWindow> ramp_windows(const LoadRamp& r, const std::vector<RequestRecord>& records,
                                     const std::vector<double>& percentiles, const GoodputSlo& goodput,
                                     const std::vector<SloTerm>& slo_terms);

}  // namespace magpie::serve
