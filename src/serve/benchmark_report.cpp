#include "serve/benchmark_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace magpie::serve {

namespace {

nlohmann::json stats_block(const MetricStats& s) {
  auto p99 = s.percentiles_ms.find(99.0);
  nlohmann::json j{{"mean_ms", s.mean_ms},
                   {"median_ms", s.median_ms},
                   {"p99_ms", p99 == s.percentiles_ms.end() ? 0.0 : p99->second},
                   {"std_ms", s.std_ms}};
  for (auto [p, v] : s.percentiles_ms)  // ours: every requested percentile
    if (p != 99.0) j[fmt::format("p{:g}_ms", p)] = v;
  return j;
}

double num(const nlohmann::json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].is_object() || !j[a].contains(b) || !j[a][b].is_number()) return 0;
  return j[a][b].get<double>();
}

}  // namespace

nlohmann::json magpie_throughput(const ServingMetrics& m) {
  return {
      {"request_throughput", m.request_throughput},
      {"output_throughput", m.output_throughput},
      {"total_token_throughput", m.total_token_throughput},
      {"completed_requests", m.completed},
      {"total_input_tokens", m.total_input},
      {"total_output_tokens", m.total_output},
      {"duration_seconds", m.duration_s},
      {"failed_requests", m.failed},
      {"request_goodput", m.has_goodput ? nlohmann::json(m.request_goodput) : nlohmann::json()}};
}

nlohmann::json magpie_latency(const ServingMetrics& m) {
  return {{"ttft", stats_block(m.ttft)},
          {"tpot", stats_block(m.tpot)},
          {"itl", stats_block(m.itl)},
          {"e2el", stats_block(m.e2el)}};
}

nlohmann::json empty_report(const std::string& framework, const std::string& model) {
  return {{"success", false},
          {"framework", framework},
          {"model", model},
          {"throughput", nullptr},
          {"latency", nullptr},
          {"kernel_summary", nlohmann::json::array()},
          {"top_bottlenecks", nlohmann::json::array()},
          {"tracelens_analysis", nullptr},
          {"gap_analysis", nullptr},
          {"gpu_monitor", nullptr},
          {"workspace_dir", ""},
          {"execution_time", 0.0},
          {"profiling_enabled", false},
          {"run_kind", "measurement"},
          {"reward_eligible", false},
          {"errors", nlohmann::json::array()},
          {"complete", false},
          {"warnings", nlohmann::json::array()},
          {"cases", nlohmann::json::array()}};
}

std::string summary_text(const nlohmann::json& r) {
  std::string rule(60, '=');
  std::string fw = r.value("framework", "");
  std::transform(fw.begin(), fw.end(), fw.begin(), [](unsigned char c) { return std::toupper(c); });
  std::string out = rule + "\n";
  out += fmt::format("Benchmark Result: {}\n{}\n", fw, rule);
  out += fmt::format("Model: {}\n", r.value("model", ""));
  bool ok = r.value("success", false);
  bool complete = r.value("complete", false);
  out += fmt::format("Status: {}{}\n", ok ? "SUCCESS" : "FAILED", complete ? "" : " (INCOMPLETE)");
  out += fmt::format("Run kind: {}\n", r.value("run_kind", ""));
  if (r.contains("throughput") && r["throughput"].is_object()) {
    const auto& t = r["throughput"];
    out += "\nThroughput:\n";
    out += fmt::format("  Request throughput: {:.2f} req/s\n", t.value("request_throughput", 0.0));
    out += fmt::format("  Output throughput: {:.2f} tok/s\n", t.value("output_throughput", 0.0));
    out +=
        fmt::format("  Total throughput: {:.2f} tok/s\n", t.value("total_token_throughput", 0.0));
    out += fmt::format("  Completed requests: {}\n", t.value("completed_requests", 0));
    out += fmt::format("  Failed requests: {}\n", t.value("failed_requests", 0));
    out += fmt::format("  Duration: {:.2f}s\n", t.value("duration_seconds", 0.0));
  }
  if (r.contains("latency") && r["latency"].is_object()) {
    const auto& l = r["latency"];
    out += "\nLatency:\n";
    for (auto [key, name] :
         {std::pair{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"}})
      out += fmt::format("  {} (mean/p99): {:.2f} ms / {:.2f} ms\n", name, num(l, key, "mean_ms"),
                         num(l, key, "p99_ms"));
  }
  if (r.contains("cases") && r["cases"].size() > 1) {
    out += "\nSweep:\n";
    for (const auto& c : r["cases"]) {
      const auto& t = c.contains("throughput") && c["throughput"].is_object()
                          ? c["throughput"]
                          : nlohmann::json::object();
      const auto& l = c.contains("latency") && c["latency"].is_object() ? c["latency"]
                                                                        : nlohmann::json::object();
      out += fmt::format(
          "  {}: {:.2f} req/s, {:.2f} tok/s, TTFT mean {:.2f} ms, TPOT mean {:.2f} ms{}\n",
          c.value("label", ""), t.value("request_throughput", 0.0),
          t.value("output_throughput", 0.0), num(l, "ttft", "mean_ms"), num(l, "tpot", "mean_ms"),
          c.value("complete", true) ? "" : " (incomplete)");
    }
  }
  if (r.contains("top_bottlenecks") && !r["top_bottlenecks"].empty()) {
    out += "\nTop Bottleneck Kernels:\n";
    int i = 0;
    for (const auto& k : r["top_bottlenecks"]) {
      if (++i > 5) break;
      out += fmt::format("  {}. {}\n", i, k.get<std::string>());
    }
  }
  if (r.contains("errors") && !r["errors"].empty()) {
    out += "\nErrors:\n";
    for (const auto& e : r["errors"]) out += fmt::format("  - {}\n", e.get<std::string>());
  }
  out += fmt::format("\nWorkspace: {}\n", r.value("workspace_dir", ""));
  out += fmt::format("Execution time: {:.2f}s\n", r.value("execution_time", 0.0));
  out += rule + "\n";
  return out;
}

}  // namespace magpie::serve
