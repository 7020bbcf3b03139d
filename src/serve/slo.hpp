#pragma once
// Service-level objectives on a case's latency distribution:
// `--slo "ttft_p99<=2s,tpot_p50<=50ms"`. Each term names a metric (ttft, tpot,
// itl, e2el), a statistic (pNN, median or mean) and a limit with its unit; a
// case meets its SLOs when every term holds.
#include <string>
#include <vector>

#include "serve/serving_metrics.hpp"

namespace magpie::serve {

struct SloTerm {
  std::string text;    // as written: "ttft_p99<=2s"
  std::string metric;  // ttft | tpot | itl | e2el
  std::string stat;    // p99 | median | mean
  double percentile = 0;  // for pNN
  double limit_ms = 0;
};

// Throws Error(kUsage) naming `option`, the term and the accepted form.
std::vector<SloTerm> parse_slo(const std::string& text, const std::string& option);

// The percentiles the terms need, to compute beside the report's own.
std::vector<double> slo_percentiles(const std::vector<SloTerm>& terms);

// A request meets the SLOs' per-request limits (ttft, tpot, e2el) for goodput.
GoodputSlo slo_goodput_limits(const std::vector<SloTerm>& terms);

struct SloCheck {
  SloTerm term;
  double value_ms = 0;
  bool met = false;
};
struct SloResult {
  std::vector<SloCheck> checks;
  bool met = false;  // every term holds (and at least one request completed)
};
SloResult evaluate_slo(const std::vector<SloTerm>& terms, const ServingMetrics& m);

}  // namespace magpie::serve
