#pragma once
// The `MAGPIE_LATENCY_JSON: {...}` line a user harness prints (docs/MAGPIE_COMPATIBILITY.md §8):
// the last such line counts; it succeeds when it parses and has no "error" key.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::kernel {

inline constexpr std::string_view kLatencyPrefix = "MAGPIE_LATENCY_JSON:";

struct LatencyReport {
  bool success = false;
  std::string error;            // from the payload's "error", or why parsing failed
  std::string mode;             // cuda_graph|profile|hip_graph|events (ours)
  std::string kernel_name;
  double median_ms = 0;
  std::vector<double> samples_ms;
  nlohmann::json payload;       // as printed
};

// nullopt when the output has no such line; a report with success=false when
// the last line is malformed or carries "error".
std::optional<LatencyReport> parse_latency_output(std::string_view output);

}  // namespace magpie::kernel
