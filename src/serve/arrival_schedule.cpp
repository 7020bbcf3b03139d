#include "serve/arrival_schedule.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "core/error.hpp"

namespace magpie::serve {

namespace {

void validate(const ArrivalOptions& o) {
  if (!(o.request_rate > 0))
    throw Error(ErrorKind::kUsage,
                fmt::format("request rate must be positive, got {}", o.request_rate));
  if (!(o.burstiness > 0) || std::isinf(o.burstiness))
    throw Error(ErrorKind::kUsage,
                fmt::format("burstiness must be positive, got {}", o.burstiness));
}

}  // namespace

std::vector<double> arrival_offsets(size_t count, const ArrivalOptions& o) {
  validate(o);
  std::vector<double> out(count, 0.0);
  if (std::isinf(o.request_rate)) return out;
  std::mt19937_64 rng(o.seed);
  std::gamma_distribution<double> gap(o.burstiness, 1.0 / (o.request_rate * o.burstiness));
  double t = 0;
  for (auto& x : out) {
    x = t;
    t += gap(rng);
  }
  return out;
}

std::vector<double> arrival_offsets_for(double duration_s, const ArrivalOptions& o) {
  validate(o);
  if (std::isinf(o.request_rate))
    throw Error(ErrorKind::kInternal, "duration-bounded schedules need a finite rate");
  std::mt19937_64 rng(o.seed);
  std::gamma_distribution<double> gap(o.burstiness, 1.0 / (o.request_rate * o.burstiness));
  std::vector<double> out;
  for (double t = 0; t < duration_s; t += gap(rng)) out.push_back(t);
  return out;
}

}  // namespace magpie::serve
