#pragma once
// The Python API's `benchmark`: keyword settings to the CLI's inline flags,
// and the run's tables (per-case summary, per-request records).
#include <map>
#include <string>

#include "python_tables.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/benchmark_report.hpp"

namespace magpie::python_api {

// Settings named as `magpie benchmark`'s flags without dashes (concurrency,
// input_len, endpoint, ready_timeout, cpu_engine, ...), their values as text;
// parsed as the CLI parses its flags. Error(kUsage) names an unknown setting
// or a value of the wrong kind.
serve::BenchmarkFlags benchmark_flags(const std::map<std::string, std::string>& settings);

// One row per case: its workload, counts, throughputs and each latency's
// mean, median, std and percentiles (ms), as benchmark_report.json's cases.
Table case_table(const serve::BenchmarkReport& report);

// One row per measured request of every case (warm-ups are not logged), read
// from the requests.jsonl each case wrote as it ran, in index order per case.
// Throws Error(kBadFormat) with the line for a malformed record.
Table request_table(const serve::BenchmarkReport& report);
// The same requests' inter-token latencies, one row per chunk: case, index, chunk, itl_s.
Table itl_table(const serve::BenchmarkReport& report);

}  // namespace magpie::python_api
