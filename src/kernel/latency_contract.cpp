#include "kernel/latency_contract.hpp"

#include <fmt/format.h>

#include "core/verdict.hpp"

namespace magpie::kernel {

std::optional<LatencyReport> parse_latency_output(std::string_view output) {
  size_t pos = output.rfind(kLatencyPrefix);
  // The prefix must start a line (a harness may echo it inside other text).
  while (pos != std::string_view::npos && pos > 0 && output[pos - 1] != '\n' && output[pos - 1] != '\r') {
    pos = pos == 0 ? std::string_view::npos : output.rfind(kLatencyPrefix, pos - 1);
  }
  if (pos == std::string_view::npos) return std::nullopt;
  size_t end = output.find('\n', pos);
  std::string_view body = output.substr(pos + kLatencyPrefix.size(),
                                        end == std::string_view::npos ? std::string_view::npos
                                                                      : end - pos - kLatencyPrefix.size());
  LatencyReport r;
  try {
    r.payload = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    r.error = fmt::format("unparsable {} line: {}", kLatencyPrefix, e.what());
    return r;
  }
  if (!r.payload.is_object()) {
    r.error = fmt::format("{} payload is not a JSON object", kLatencyPrefix);
    return r;
  }
  if (r.payload.contains("error") && !r.payload["error"].is_null()) {
    r.error = r.payload["error"].is_string() ? r.payload["error"].get<std::string>() : r.payload["error"].dump();
    return r;
  }
  r.mode = r.payload.value("mode", "");
  r.kernel_name = r.payload.value("kernel_name", "");
  const auto& stats = r.payload.contains("stats") ? r.payload["stats"] : nlohmann::json::object();
  if (stats.contains("samples_ms") && stats["samples_ms"].is_array()) {
    for (const auto& v : stats["samples_ms"]) {
      if (v.is_number()) r.samples_ms.push_back(v.get<double>());
    }
  }
  if (stats.contains("median_ms") && stats["median_ms"].is_number()) {
    r.median_ms = stats["median_ms"].get<double>();
  } else if (stats.contains("p50_ms") && stats["p50_ms"].is_number()) {
    r.median_ms = stats["p50_ms"].get<double>();
  } else if (r.samples_ms.empty()) {
    r.error = "payload has neither stats.median_ms nor stats.samples_ms";
    return r;
  } else {
    // Samples only: the median is theirs (was left at 0, so the report said 0 ms).
    r.median_ms = stats::median_of(r.samples_ms);
  }
  if (r.samples_ms.empty()) r.samples_ms.push_back(r.median_ms);
  r.success = true;
  return r;
}

}  // namespace magpie::kernel
