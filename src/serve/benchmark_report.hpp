#pragma once
// benchmark_report.json with Magpie's keys (docs/MAGPIE_COMPATIBILITY.md §4) and summary.txt.
#include <nlohmann/json.hpp>
#include <string>

#include "serve/serving_metrics.hpp"

namespace magpie::serve {

// Magpie's `throughput` and `latency` blocks from our metrics.
nlohmann::json magpie_throughput(const ServingMetrics& m);
nlohmann::json magpie_latency(const ServingMetrics& m);

// A report with every Magpie key present (null/empty where nothing is known).
nlohmann::json empty_report(const std::string& framework, const std::string& model);

// Magpie's summary.txt layout, plus our completeness and sweep lines.
std::string summary_text(const nlohmann::json& report);

}  // namespace magpie::serve
