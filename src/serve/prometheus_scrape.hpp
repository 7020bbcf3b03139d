#pragma once
// The server's Prometheus /metrics, scraped before and after a run: the
// server's own view (queue depth, KV-cache use, token counters, latency
// histograms) next to the client's.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "serve/endpoint.hpp"

namespace magpie::serve {

// "name{labels}" → value for every sample line of the text exposition format.
using PrometheusSamples = std::map<std::string, double>;
PrometheusSamples parse_prometheus_text(std::string_view text);

// The sum of a metric's samples over all its label sets ("name" and "name{...}").
double metric_total(const PrometheusSamples& samples, std::string_view name);

struct PrometheusScrape {
  bool ok = false;
  std::string error;
  PrometheusSamples samples;
};
PrometheusScrape scrape_metrics(const Endpoint& endpoint);

// {before, after, delta} for the samples worth reading (counters' deltas,
// gauges' values); `prefix` filters by metric name (e.g. "vllm:"; empty = all).
nlohmann::json prometheus_summary(const PrometheusScrape& before, const PrometheusScrape& after,
                                  std::string_view prefix);

}  // namespace magpie::serve
