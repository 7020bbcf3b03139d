#pragma once
// The one writer of a serving run's report: BenchmarkReport → benchmark_report.json
// (Magpie's keys, docs/MAGPIE_COMPATIBILITY.md §4, plus ours) and summary.txt.
// Nothing is computed here that the report does not hold.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/benchmark_report.hpp"

namespace magpie::serve {

// benchmark_report.json's object. Every Magpie key is present (null or empty
// where nothing is known).
nlohmann::json report_json(const BenchmarkReport& report);

// Magpie's summary.txt layout, plus our completeness and sweep lines.
std::string summary_text(const BenchmarkReport& report);

// Writes <workspace>/benchmark_report.json and <workspace>/summary.txt (atomically).
void write_report_files(const BenchmarkReport& report, const std::filesystem::path& workspace);

// The case whose figures are the report's top-level `throughput`/`latency` (and
// the results store's headline metrics): the first case, or for an SLO search
// the knee's first run (the highest passing probe), since the first case is
// only the search's lowest probe. Null when there is no case.
const CaseReport* headline_case(const BenchmarkReport& report);

// Magpie's `throughput` and `latency` blocks of one case's metrics.
nlohmann::json throughput_json(const ServingMetrics& m);
nlohmann::json latency_json(const ServingMetrics& m);

}  // namespace magpie::serve
