#include "store/serving_requests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double number_or(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

json parse_json_file(const fs::path& path) {
  auto buf = read_file(path);
  try {
    return json::parse(buf.view());
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("not valid JSON: {}", e.what()), path.string());
  }
}

double last_completion(const std::vector<ServingRequest>& reqs) {
  double end = 0;
  for (const auto& r : reqs) end = std::max(end, r.start_s + r.e2el_s);
  return end;
}

// The case's records: requests.jsonl when present, else the detailed result JSON.
ServingCase load_case(const fs::path& dir, const std::string& label, double reported_duration) {
  ServingCase c;
  const fs::path log = dir / "requests.jsonl", raw = dir / "benchmark_serving_result.json";
  std::error_code ec;
  if (fs::is_regular_file(log, ec)) {
    auto buf = read_file(log);
    c.requests = parse_requests_jsonl(buf.view(), log.string());
    c.source = log.string();
    c.has_timeline = true;
    c.duration_s = reported_duration;
    if (!(c.duration_s > 0) && fs::is_regular_file(raw, ec))
      c.duration_s = number_or(parse_json_file(raw), "duration", 0);
  } else if (fs::is_regular_file(raw, ec)) {
    auto buf = read_file(raw);
    c = parse_serving_result_json(buf.view(), raw.string());
    if (reported_duration > 0) c.duration_s = reported_duration;
  } else {
    throw Error(ErrorKind::kNotFound,
                fmt::format("no per-request records for case '{}': neither requests.jsonl nor "
                            "benchmark_serving_result.json",
                            label),
                dir.string(), std::nullopt,
                "diff needs a serving benchmark workspace (magpie benchmark vllm ...)");
  }
  c.label = label;
  c.dir = dir;
  if (!(c.duration_s > 0) && c.has_timeline) c.duration_s = last_completion(c.requests);
  return c;
}

}  // namespace

std::vector<ServingRequest> parse_requests_jsonl(std::string_view text, const std::string& origin) {
  std::vector<ServingRequest> out;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    uint64_t offset = pos;
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      // A run killed mid-write leaves a torn last line: keep what was measured.
      if (pos >= text.size()) break;
      throw Error(ErrorKind::kBadFormat,
                  fmt::format("line {}: not a JSON request record: {}", line_no, e.what()), origin,
                  offset);
    }
    if (!j.is_object() || j.value("warmup", false)) continue;
    ServingRequest r;
    r.success = j.value("success", false);
    r.start_s = number_or(j, "start_s", 0);
    r.ttft_s = number_or(j, "ttft_s", 0);
    r.e2el_s = number_or(j, "e2el_s", 0);
    r.output_tokens = static_cast<int64_t>(number_or(j, "output_tokens", -1));
    if (auto it = j.find("itl_s"); it != j.end() && it->is_array())
      for (const auto& v : *it)
        if (v.is_number()) r.itl_s.push_back(v.get<double>());
    out.push_back(std::move(r));
  }
  return out;
}

ServingCase parse_serving_result_json(std::string_view text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("not valid JSON: {}", e.what()), origin);
  }
  ServingCase c;
  c.source = origin;
  c.duration_s = number_or(j, "duration", 0);
  auto arr = [&](const char* key) -> const json* {
    auto it = j.find(key);
    return it != j.end() && it->is_array() ? &*it : nullptr;
  };
  const json* ttfts = arr("ttfts");
  if (!ttfts) {
    throw Error(ErrorKind::kNotFound,
                "no per-request arrays (ttfts, itls, ...): the benchmark was saved without details",
                origin, std::nullopt,
                "rerun with per-request results (vLLM: --save-detailed), or keep requests.jsonl");
  }
  const json *itls = arr("itls"), *outs = arr("output_lens"), *errors = arr("errors"),
             *lat = arr("latencies"), *starts = arr("start_times");
  const size_t n = ttfts->size();
  auto at = [&](const json* a, size_t i) -> const json* {
    return a && i < a->size() ? &(*a)[i] : nullptr;
  };
  c.has_timeline = starts && lat && starts->size() == n && lat->size() == n;
  for (size_t i = 0; i < n; ++i) {
    ServingRequest r;
    r.ttft_s = (*ttfts)[i].is_number() ? (*ttfts)[i].get<double>() : 0;
    if (auto* v = at(itls, i); v && v->is_array())
      for (const auto& x : *v)
        if (x.is_number()) r.itl_s.push_back(x.get<double>());
    if (auto* v = at(outs, i); v && v->is_number()) r.output_tokens = v->get<int64_t>();
    auto* err = at(errors, i);
    r.success =
        !(err && err->is_string() && !err->get<std::string>().empty()) && r.output_tokens != 0;
    if (auto* v = at(lat, i); v && v->is_number()) {
      r.e2el_s = v->get<double>();
    } else {  // older vLLM keeps no latencies: the stream's own sum
      r.e2el_s = r.ttft_s;
      for (double x : r.itl_s) r.e2el_s += x;
    }
    if (auto* v = at(starts, i); v && v->is_number()) r.start_s = v->get<double>();
    c.requests.push_back(std::move(r));
  }
  if (c.has_timeline &&
      !c.requests.empty()) {  // vLLM's start_times are absolute: rebase to the first
    double t0 = INFINITY;
    for (const auto& r : c.requests) t0 = std::min(t0, r.start_s);
    for (auto& r : c.requests) r.start_s -= t0;
  }
  return c;
}

std::vector<ServingCase> load_serving_cases(const fs::path& workspace) {
  std::vector<ServingCase> out;
  const fs::path report_path = workspace / "benchmark_report.json";
  std::error_code ec;
  json report;
  if (fs::is_regular_file(report_path, ec)) report = parse_json_file(report_path);
  const json cases = report.is_object() && report.contains("cases") && report["cases"].is_array()
                         ? report["cases"]
                         : json::array();
  if (cases.empty()) {
    double d =
        report.is_object() && report.contains("throughput") && report["throughput"].is_object()
            ? number_or(report["throughput"], "duration_seconds", 0)
            : 0;
    out.push_back(load_case(workspace, "", d));
    return out;
  }
  for (const auto& cj : cases) {
    std::string label = cj.value("label", "");
    double d = cj.contains("throughput") && cj["throughput"].is_object()
                   ? number_or(cj["throughput"], "duration_seconds", 0)
                   : 0;
    // The layout benchmark_runner writes; the recorded absolute path only if the workspace was not
    // moved.
    fs::path dir = cases.size() == 1 ? workspace : workspace / "cases" / label;
    if (!fs::is_directory(dir, ec) && cj.contains("requests_path") &&
        cj["requests_path"].is_string())
      dir = fs::path(cj["requests_path"].get<std::string>()).parent_path();
    out.push_back(load_case(dir, cases.size() == 1 ? "" : label, d));
  }
  return out;
}

}  // namespace magpie::store
