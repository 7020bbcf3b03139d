#include "serve/load_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "core/error.hpp"

namespace magpie::serve {

namespace {

// Step i's rate (0-based) of an N-step ramp.
double step_rate(const RateRamp& r, int64_t i) {
  return r.windows <= 1 ? r.from : r.from + (r.to - r.from) * static_cast<double>(i) / static_cast<double>(r.windows - 1);
}

// The integral of the rate from 0 to t.
double operational_time(const RateRamp& r, double t) {
  if (!r.steps) return r.from * t + (r.to - r.from) * t * t / (2 * r.duration_s);
  const double len = r.duration_s / static_cast<double>(r.windows);
  double u = 0;
  for (int64_t i = 0; i < r.windows && t > 0; ++i) {
    const double part = std::min(t, len);
    u += step_rate(r, i) * part;
    t -= part;
  }
  return u;
}

// Its inverse: the time at which `u` arrivals are expected; +inf past the ramp's end.
double time_at(const RateRamp& r, double u) {
  if (u > operational_time(r, r.duration_s)) return std::numeric_limits<double>::infinity();
  if (!r.steps) {
    const double a = (r.to - r.from) / r.duration_s;
    if (a == 0) return u / r.from;
    return (-r.from + std::sqrt(std::max(0.0, r.from * r.from + 2 * a * u))) / a;
  }
  const double len = r.duration_s / static_cast<double>(r.windows);
  double t = 0;
  for (int64_t i = 0; i < r.windows; ++i) {
    const double cap = step_rate(r, i) * len;
    if (u <= cap) return t + u / step_rate(r, i);
    u -= cap;
    t += len;
  }
  return r.duration_s;
}

}  // namespace

RateRamp parse_rate_ramp(const std::string& text, const std::string& option) {
  const std::string form =
      "linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N (rates in req/s, e.g. \"steps:5,40,60,8\")";
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kUsage, fmt::format("{}: '{}' {}; expected {}", option, text, why, form));
  };
  RateRamp r;
  r.text = text;
  auto colon = text.find(':');
  if (colon == std::string::npos) throw bad("names no shape");
  const std::string shape = text.substr(0, colon);
  if (shape != "linear" && shape != "steps") throw bad(fmt::format("names the shape '{}'", shape));
  r.steps = shape == "steps";
  std::vector<double> v;
  std::stringstream ss(text.substr(colon + 1));
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      size_t used = 0;
      v.push_back(std::stod(item, &used));
      if (used != item.size() || !std::isfinite(v.back())) throw bad(fmt::format("has '{}', not a number", item));
    } catch (const std::logic_error&) {
      throw bad(fmt::format("has '{}', not a number", item));
    }
  }
  if (v.size() != (r.steps ? 4u : 3u) && !(!r.steps && v.size() == 4u))
    throw bad(fmt::format("has {} numbers", v.size()));
  r.from = v[0];
  r.to = v[1];
  r.duration_s = v[2];
  if (v.size() == 4) r.windows = static_cast<int64_t>(v[3]);
  if (v.size() == 4 && (v[3] != std::floor(v[3]) || v[3] < 1)) throw bad("has a step count that is not a whole number >= 1");
  if (!(r.duration_s > 0)) throw bad("lasts no time: SECONDS must be above 0");
  if (r.steps ? !(r.from > 0 && r.to > 0) : !(r.from >= 0 && r.to >= 0 && r.from + r.to > 0))
    throw bad(r.steps ? "has a step rate of 0: FROM and TO must be above 0" : "never sends: FROM or TO must be above 0");
  return r;
}

double ramp_rate_at(const RateRamp& r, double t) {
  t = std::clamp(t, 0.0, r.duration_s);
  if (!r.steps) return r.from + (r.to - r.from) * t / r.duration_s;
  const double len = r.duration_s / static_cast<double>(r.windows);
  return step_rate(r, std::min<int64_t>(static_cast<int64_t>(t / len), r.windows - 1));
}

std::vector<double> ramp_schedule(const RateRamp& r, double burstiness, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / burstiness);  // unit rate
  std::vector<double> out;
  for (double u = 0;;) {
    const double t = time_at(r, u);
    if (!(t < r.duration_s)) break;
    out.push_back(t);
    u += gap(rng);
  }
  return out;
}

std::vector<RampWindow> ramp_windows(const RateRamp& r, const std::vector<RequestRecord>& records,
                                     const std::vector<double>& percentiles, const GoodputSlo& goodput,
                                     const std::vector<SloTerm>& slo_terms) {
  std::vector<RampWindow> out;
  const double len = r.duration_s / static_cast<double>(r.windows);
  for (int64_t i = 0; i < r.windows; ++i) {
    RampWindow w;
    w.from_s = len * static_cast<double>(i);
    w.to_s = i + 1 == r.windows ? r.duration_s : len * static_cast<double>(i + 1);
    w.offered_rate = (operational_time(r, w.to_s) - operational_time(r, w.from_s)) / (w.to_s - w.from_s);
    std::vector<RequestRecord> mine;
    for (const auto& rec : records)
      if (!rec.warmup && rec.scheduled_s >= w.from_s && (rec.scheduled_s < w.to_s || i + 1 == r.windows))
        mine.push_back(rec);
    MetricsInput mi;
    mi.records = &mine;
    // Throughput over the window's own span: its requests were offered over it.
    mi.duration_s = w.to_s - w.from_s;
    mi.percentiles = percentiles;
    mi.slo = goodput;
    w.metrics = compute_metrics(mi);
    if (!slo_terms.empty()) w.slo = evaluate_slo(slo_terms, w.metrics);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace magpie::serve
