#include "serve/prometheus_scrape.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "serve/http_client.hpp"

namespace magpie::serve {

PrometheusSamples parse_prometheus_text(std::string_view text) {
  PrometheusSamples out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    // The name may carry {labels} with spaces inside quoted values.
    size_t name_end = line.find('{');
    size_t value_start;
    if (name_end != std::string_view::npos && name_end < line.find(' ')) {
      size_t close = line.find('}', name_end);
      bool quoted = false;
      for (size_t i = name_end; i < line.size(); ++i) {
        if (line[i] == '"' && line[i - 1] != '\\') quoted = !quoted;
        if (!quoted && line[i] == '}') {
          close = i;
          break;
        }
      }
      if (close == std::string_view::npos) continue;
      value_start = close + 1;
    } else {
      value_start = line.find(' ');
      if (value_start == std::string_view::npos) continue;
    }
    std::string name(line.substr(0, value_start));
    std::string_view rest = line.substr(value_start);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::string value(rest.substr(0, rest.find(' ')));  // drop an optional timestamp
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    out[std::move(name)] = v;
  }
  return out;
}

double metric_total(const PrometheusSamples& samples, std::string_view name) {
  double total = 0;
  for (auto it = samples.lower_bound(std::string(name)); it != samples.end(); ++it) {
    std::string_view key = it->first;
    if (key.substr(0, name.size()) != name) break;
    if (key.size() == name.size() || key[name.size()] == '{') total += it->second;
  }
  return total;
}

PrometheusScrape scrape_metrics(const Endpoint& endpoint) {
  PrometheusScrape s;
  auto r = http_request(endpoint, "GET", endpoint.target("/metrics"), "", std::chrono::seconds(10));
  if (!r.ok) {
    s.error = r.error;
  } else if (r.status != 200) {
    s.error = "HTTP " + std::to_string(r.status);
  } else {
    s.ok = true;
    s.samples = parse_prometheus_text(r.body);
  }
  return s;
}

nlohmann::json prometheus_summary(const PrometheusScrape& before, const PrometheusScrape& after,
                                  std::string_view prefix) {
  nlohmann::json j{{"before_ok", before.ok}, {"after_ok", after.ok}};
  if (!before.ok) j["before_error"] = before.error;
  if (!after.ok) j["after_error"] = after.error;
  auto& delta = j["delta"] = nlohmann::json::object();
  auto& after_values = j["after"] = nlohmann::json::object();
  for (const auto& [name, value] : after.samples) {
    if (!prefix.empty() && !std::string_view(name).starts_with(prefix)) continue;
    // Histogram buckets are many and rarely read; keep their _sum and _count.
    if (name.find("_bucket{") != std::string::npos) continue;
    // `*_created` samples are creation timestamps, not measurements.
    if (name.find("_created{") != std::string::npos || name.ends_with("_created")) continue;
    if (!std::isfinite(value)) continue;
    after_values[name] = value;
    if (auto it = before.samples.find(name);
        it != before.samples.end() && std::isfinite(it->second))
      delta[name] = value - it->second;
  }
  return j;
}

}  // namespace magpie::serve
