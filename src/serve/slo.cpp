#include "serve/slo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.hpp"

namespace magpie::serve {

namespace {

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

const MetricStats& stats_of(const ServingMetrics& m, const std::string& metric) {
  if (metric == "ttft") return m.ttft;
  if (metric == "tpot") return m.tpot;
  if (metric == "itl") return m.itl;
  return m.e2el;
}

}  // namespace

std::vector<SloTerm> parse_slo(const std::string& text, const std::string& option) {
  const std::string form =
      "comma-separated METRIC_STAT<=LIMIT terms: METRIC ttft|tpot|itl|e2el, STAT pNN|median|mean, LIMIT a number "
      "with ms, s or us (e.g. \"ttft_p99<=2s,tpot_p50<=50ms\")";
  auto bad = [&](const std::string& term, const std::string& why) {
    return Error(ErrorKind::kUsage, fmt::format("{}: '{}' {}; expected {}", option, term, why, form));
  };
  std::vector<SloTerm> terms;
  size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    auto raw = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (raw.empty()) throw bad(text, "has an empty term");
    SloTerm t;
    t.text = raw;
    auto op = raw.find("<=");
    if (op == std::string::npos) throw bad(raw, "has no '<='");
    auto lhs = trim(raw.substr(0, op));
    auto rhs = trim(raw.substr(op + 2));
    auto us = lhs.find('_');
    if (us == std::string::npos) throw bad(raw, "does not name METRIC_STAT");
    t.metric = lhs.substr(0, us);
    t.stat = lhs.substr(us + 1);
    if (t.metric != "ttft" && t.metric != "tpot" && t.metric != "itl" && t.metric != "e2el")
      throw bad(raw, fmt::format("names the metric '{}'", t.metric));
    if (t.stat == "p50") t.stat = "median";
    if (t.stat.size() > 1 && t.stat[0] == 'p') {
      const char* b = t.stat.data() + 1;
      const char* e = t.stat.data() + t.stat.size();
      auto [ptr, ec] = std::from_chars(b, e, t.percentile);
      if (ec != std::errc() || ptr != e || !(t.percentile > 0 && t.percentile < 100))
        throw bad(raw, fmt::format("names the statistic '{}'", t.stat));
    } else if (t.stat != "median" && t.stat != "mean") {
      throw bad(raw, fmt::format("names the statistic '{}'", t.stat));
    }
    double scale = 0;
    std::string number;
    for (auto [unit, s] : {std::pair{"ms", 1.0}, {"us", 1e-3}, {"s", 1000.0}})
      if (rhs.size() > std::string(unit).size() && rhs.ends_with(unit)) {
        scale = s;
        number = trim(rhs.substr(0, rhs.size() - std::string(unit).size()));
        break;
      }
    if (scale == 0) throw bad(raw, "gives its limit without a unit (ms, s or us)");
    double v = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || ptr != number.data() + number.size() || !(v > 0) || !std::isfinite(v))
      throw bad(raw, fmt::format("has the limit '{}', not a positive number", rhs));
    t.limit_ms = v * scale;
    terms.push_back(std::move(t));
  }
  return terms;
}

std::vector<double> slo_percentiles(const std::vector<SloTerm>& terms) {
  std::vector<double> ps;
  for (const auto& t : terms)
    if (t.percentile > 0) ps.push_back(t.percentile);
  return ps;
}

GoodputSlo slo_goodput_limits(const std::vector<SloTerm>& terms) {
  GoodputSlo g;
  auto tighten = [](std::optional<double>& slot, double v) { slot = slot ? std::min(*slot, v) : v; };
  for (const auto& t : terms) {
    if (t.metric == "ttft") tighten(g.ttft_ms, t.limit_ms);
    if (t.metric == "tpot") tighten(g.tpot_ms, t.limit_ms);
    if (t.metric == "e2el") tighten(g.e2el_ms, t.limit_ms);
  }
  return g;
}

SloResult evaluate_slo(const std::vector<SloTerm>& terms, const ServingMetrics& m) {
  SloResult r;
  r.met = m.completed > 0;
  for (const auto& t : terms) {
    const auto& s = stats_of(m, t.metric);
    SloCheck c{t, 0, false};
    if (t.stat == "mean") {
      c.value_ms = s.mean_ms;
    } else if (t.stat == "median") {
      c.value_ms = s.median_ms;
    } else {
      // The runner computes every percentile a term names; one missing is not met.
      auto it = s.percentiles_ms.find(t.percentile);
      if (it == s.percentiles_ms.end()) {
        r.met = false;
        r.checks.push_back(std::move(c));
        continue;
      }
      c.value_ms = it->second;
    }
    c.met = s.count > 0 && c.value_ms <= t.limit_ms;
    r.met = r.met && c.met;
    r.checks.push_back(std::move(c));
  }
  return r;
}

}  // namespace magpie::serve
