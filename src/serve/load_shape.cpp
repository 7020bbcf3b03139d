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

// The mean of a piecewise-constant cap over [from, to).
double mean_cap(const std::vector<std::pair<double, int64_t>>& changes, double end, double from, double to) {
  double sum = 0;
  for (size_t i = 0; i < changes.size(); ++i) {
    const double a = std::max(from, changes[i].first);
    const double b = std::min(to, i + 1 < changes.size() ? changes[i + 1].first : end);
    if (b > a) sum += (b - a) * static_cast<double>(changes[i].second);
  }
  return sum / (to - from);
}

}  // namespace

namespace {

LoadRamp parse_ramp(const std::string& text, const std::string& option, bool concurrency) {
  const std::string form =
      concurrency ? "linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N (requests in flight, whole "
                    "numbers >= 1, e.g. \"steps:1,8,60,4\")"
                  : "linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N (rates in req/s, e.g. "
                    "\"steps:5,40,60,8\")";
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kUsage, fmt::format("{}: '{}' {}; expected {}", option, text, why, form));
  };
  LoadRamp r;
  r.text = text;
  r.concurrency = concurrency;
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
  if (concurrency) {
    if (r.from != std::floor(r.from) || r.to != std::floor(r.to) || r.from < 1 || r.to < 1)
      throw bad("has a concurrency that is not a whole number >= 1");
  } else if (r.steps ? !(r.from > 0 && r.to > 0) : !(r.from >= 0 && r.to >= 0 && r.from + r.to > 0)) {
    throw bad(r.steps ? "has a step rate of 0: FROM and TO must be above 0" : "never sends: FROM or TO must be above 0");
  }
  return r;
}

}  // namespace

RateRamp parse_rate_ramp(const std::string& text, const std::string& option) {
  return parse_ramp(text, option, false);
}

LoadRamp parse_concurrency_ramp(const std::string& text, const std::string& option) {
  return parse_ramp(text, option, true);
}

std::vector<std::pair<double, int64_t>> concurrency_changes(const LoadRamp& r) {
  std::vector<std::pair<double, int64_t>> out;
  auto add = [&](double t, int64_t cap) {
    cap = std::max<int64_t>(cap, 1);
    if (out.empty() || out.back().second != cap) out.emplace_back(t, cap);
  };
  if (r.steps) {
    const double len = r.duration_s / static_cast<double>(r.windows);
    for (int64_t i = 0; i < r.windows; ++i)
      add(len * static_cast<double>(i), std::llround(step_rate(r, i)));
    return out;
  }
  // Linear: the cap moves to k where the ramp crosses k -/+ 0.5.
  add(0, std::llround(r.from));
  const auto first = std::llround(r.from), last = std::llround(r.to);
  const double slope = (r.to - r.from) / r.duration_s;
  for (int64_t k = first; k != last;) {
    k += last > first ? 1 : -1;
    const double edge = static_cast<double>(k) + (last > first ? -0.5 : 0.5);
    add(std::clamp((edge - r.from) / slope, 0.0, r.duration_s), k);
  }
  return out;
}

int64_t ramp_peak_concurrency(const LoadRamp& r) {
  int64_t peak = 1;
  for (const auto& [t, cap] : concurrency_changes(r)) peak = std::max(peak, cap);
  return peak;
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

std::vector<RampWindow> ramp_windows(const LoadRamp& r, const std::vector<RequestRecord>& records,
                                     const std::vector<double>& percentiles, const GoodputSlo& goodput,
                                     const std::vector<SloTerm>& slo_terms) {
  std::vector<RampWindow> out;
  const double len = r.duration_s / static_cast<double>(r.windows);
  const auto changes = r.concurrency ? concurrency_changes(r) : std::vector<std::pair<double, int64_t>>{};
  for (int64_t i = 0; i < r.windows; ++i) {
    RampWindow w;
    w.from_s = len * static_cast<double>(i);
    w.to_s = i + 1 == r.windows ? r.duration_s : len * static_cast<double>(i + 1);
    if (r.concurrency) {
      w.target_concurrency = mean_cap(changes, r.duration_s, w.from_s, w.to_s);
      double busy = 0;  // request-seconds in flight within the window
      for (const auto& rec : records)
        if (!rec.warmup)
          busy += std::max(0.0, std::min(w.to_s, rec.start_s + rec.latency) - std::max(w.from_s, rec.start_s));
      w.mean_in_flight = busy / (w.to_s - w.from_s);
    } else {
      w.offered_rate = (operational_time(r, w.to_s) - operational_time(r, w.from_s)) / (w.to_s - w.from_s);
    }
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
