#include "python_benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::python_api {

namespace {

using nlohmann::json;

Error bad_value(const std::string& name, const std::string& text, const char* kind) {
  return Error(ErrorKind::kUsage, fmt::format("benchmark setting {}='{}' is not {}", name, text, kind), "",
               std::nullopt, fmt::format("give {} as the CLI's --{} takes it", name, name));
}

double parse_double(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) throw bad_value(name, text, "a number");
  return v;
}

template <class Int>
Int parse_int(const std::string& name, const std::string& text) {
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) throw bad_value(name, text, "an integer");
  return v;
}

bool parse_bool(const std::string& name, const std::string& text) {
  if (text == "1" || text == "true" || text == "True") return true;
  if (text == "0" || text == "false" || text == "False") return false;
  throw bad_value(name, text, "true or false");
}

}  // namespace

serve::BenchmarkFlags benchmark_flags(const std::map<std::string, std::string>& settings) {
  serve::BenchmarkFlags f;
  // The CLI's flags (apps/magpie/serve_options.cpp), by their names without dashes.
  const std::map<std::string, std::optional<std::string>*> text = {
      {"framework", &f.framework},       {"model", &f.model},
      {"precision", &f.precision},       {"run_mode", &f.run_mode},
      {"run_kind", &f.run_kind},         {"docker_image", &f.docker_image},
      {"output_dir", &f.output_dir},     {"endpoint", &f.endpoint},
      {"concurrency", &f.concurrency},   {"input_len", &f.input_len},
      {"output_len", &f.output_len},     {"tp", &f.tp},
      {"request_rate", &f.request_rate}, {"num_prompts", &f.num_prompts},
      {"dataset", &f.dataset},           {"dataset_path", &f.dataset_path},
      {"api", &f.api},                   {"range_ratio", &f.range_ratio},
      {"max_model_len", &f.max_model_len}, {"served_model_name", &f.served_model_name},
      {"engine_executable", &f.engine_executable}, {"slo", &f.slo},
      {"think_time", &f.think_time},     {"session_header", &f.session_header},
      {"search", &f.search},             {"search_range", &f.search_range},
      {"rate_ramp", &f.rate_ramp}};
  const std::map<std::string, std::optional<double>*> real = {
      {"timeout", &f.timeout},
      {"burstiness", &f.burstiness},
      {"duration", &f.duration},
      {"slo_ttft_ms", &f.slo_ttft_ms},
      {"slo_tpot_ms", &f.slo_tpot_ms},
      {"slo_e2el_ms", &f.slo_e2el_ms},
      {"request_timeout", &f.request_timeout},
      {"ready_timeout", &f.ready_timeout},
      {"prefix_reuse", &f.prefix_reuse},
      {"trace_speedup", &f.trace_speedup},
      {"search_step", &f.search_step},
      {"search_noise", &f.search_noise},
      {"search_max_time", &f.search_max_time}};
  const std::map<std::string, std::optional<int64_t>*> integer = {
      {"warmups", &f.warmups},
      {"prefix_len", &f.prefix_len},
      {"prefix_pool", &f.prefix_pool},
      {"token_id_max", &f.token_id_max},
      {"profile_num_prompts", &f.profile_num_prompts},
      {"turns", &f.turns},
      {"system_prompt_len", &f.system_prompt_len},
      {"session_concurrency", &f.session_concurrency},
      {"num_sessions", &f.num_sessions},
      {"search_repeats", &f.search_repeats},
      {"search_max_repeats", &f.search_max_repeats},
      {"search_max_probes", &f.search_max_probes}};
  for (const auto& [name, value] : settings) {
    if (auto t = text.find(name); t != text.end()) {
      *t->second = value;
    } else if (auto r = real.find(name); r != real.end()) {
      *r->second = parse_double(name, value);
    } else if (auto i = integer.find(name); i != integer.end()) {
      *i->second = parse_int<int64_t>(name, value);
    } else if (name == "seed") {
      f.seed = parse_int<uint64_t>(name, value);
    } else if (name == "torch_profiler") {
      f.torch_profiler = parse_bool(name, value);
    } else if (name == "system_profiler") {
      f.system_profiler = parse_bool(name, value);
    } else if (name == "cpu_engine") {
      f.engine_gpu = !parse_bool(name, value);
    } else {
      throw Error(ErrorKind::kUsage, fmt::format("unknown benchmark setting '{}'", name), "", std::nullopt,
                  "settings are `magpie benchmark`'s flags without dashes (concurrency, input_len, "
                  "endpoint, ...); see `magpie benchmark --help`");
    }
  }
  return f;
}

Table case_table(const serve::BenchmarkReport& report) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Percentile columns: every case's (a sweep asks the same of each; a missing one is NaN).
  std::vector<double> pcts;
  for (const auto& c : report.cases)
    for (const auto& [p, v] : c.metrics.ttft.percentiles_ms)
      if (std::find(pcts.begin(), pcts.end(), p) == pcts.end()) pcts.push_back(p);
  std::sort(pcts.begin(), pcts.end());

  std::vector<std::string> label;
  std::vector<int64_t> concurrency, input_len, output_len, num_prompts, complete, completed, failed, not_sent,
      total_input, total_output, max_concurrent, peak_concurrency;
  std::vector<double> request_rate, duration, req_tput, goodput, out_tput, tok_tput;
  for (const auto& c : report.cases) {
    const auto& m = c.metrics;
    label.push_back(c.label);
    concurrency.push_back(c.concurrency);
    input_len.push_back(c.input_len);
    output_len.push_back(c.output_len);
    num_prompts.push_back(c.num_prompts);
    request_rate.push_back(c.request_rate);
    complete.push_back(c.complete ? 1 : 0);
    completed.push_back(static_cast<int64_t>(m.completed));
    failed.push_back(static_cast<int64_t>(m.failed));
    not_sent.push_back(static_cast<int64_t>(c.not_sent));
    duration.push_back(m.duration_s);
    total_input.push_back(m.total_input);
    total_output.push_back(m.total_output);
    req_tput.push_back(m.request_throughput);
    goodput.push_back(m.has_goodput ? m.request_goodput : nan);
    out_tput.push_back(m.output_throughput);
    tok_tput.push_back(m.total_token_throughput);
    max_concurrent.push_back(m.max_concurrent_requests);
    peak_concurrency.push_back(m.peak_concurrency);
  }
  Table out{{"case", std::move(label)},
            {"concurrency", std::move(concurrency)},
            {"input_len", std::move(input_len)},
            {"output_len", std::move(output_len)},
            {"num_prompts", std::move(num_prompts)},
            {"request_rate", std::move(request_rate)},
            {"complete", std::move(complete)},
            {"completed", std::move(completed)},
            {"failed", std::move(failed)},
            {"not_sent", std::move(not_sent)},
            {"duration_s", std::move(duration)},
            {"total_input_tokens", std::move(total_input)},
            {"total_output_tokens", std::move(total_output)},
            {"request_throughput", std::move(req_tput)},
            {"request_goodput", std::move(goodput)},
            {"output_throughput", std::move(out_tput)},
            {"total_token_throughput", std::move(tok_tput)},
            {"max_concurrent_requests", std::move(max_concurrent)},
            {"peak_concurrency", std::move(peak_concurrency)}};
  using Stats = serve::MetricStats serve::ServingMetrics::*;
  for (auto [name, stats] : {std::pair<const char*, Stats>{"ttft", &serve::ServingMetrics::ttft},
                             {"tpot", &serve::ServingMetrics::tpot},
                             {"itl", &serve::ServingMetrics::itl},
                             {"e2el", &serve::ServingMetrics::e2el}}) {
    std::vector<double> mean, median, stddev;
    std::vector<std::vector<double>> by_pct(pcts.size());
    for (const auto& c : report.cases) {
      const serve::MetricStats& s = c.metrics.*stats;
      mean.push_back(s.mean_ms);
      median.push_back(s.median_ms);
      stddev.push_back(s.std_ms);
      for (size_t k = 0; k < pcts.size(); ++k) {
        auto it = s.percentiles_ms.find(pcts[k]);
        by_pct[k].push_back(it == s.percentiles_ms.end() ? nan : it->second);
      }
    }
    out.push_back({fmt::format("{}_mean_ms", name), std::move(mean)});
    out.push_back({fmt::format("{}_median_ms", name), std::move(median)});
    out.push_back({fmt::format("{}_std_ms", name), std::move(stddev)});
    for (size_t k = 0; k < pcts.size(); ++k)
      out.push_back({fmt::format("{}_p{:g}_ms", name, pcts[k]), std::move(by_pct[k])});
  }
  return out;
}

namespace {

// Each case's requests.jsonl lines, parsed, in index order; `visit(label, record)`.
template <class Visit>
void each_request(const serve::BenchmarkReport& report, Visit&& visit) {
  for (const auto& c : report.cases) {
    std::error_code ec;
    if (c.requests_path.empty() || !std::filesystem::is_regular_file(c.requests_path, ec)) continue;
    const PaddedBuffer text = read_file(c.requests_path);
    const std::string_view all = text.view();
    std::vector<json> records;
    size_t pos = 0, line_no = 0;
    while (pos < all.size()) {
      size_t end = all.find('\n', pos);
      if (end == std::string_view::npos) end = all.size();
      const std::string_view line = all.substr(pos, end - pos);
      const size_t offset = pos;
      pos = end + 1;
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object()) {
        if (pos >= all.size()) break;  // a run killed mid-write leaves a torn last line
        throw Error(ErrorKind::kBadFormat, fmt::format("line {}: not a JSON request record", line_no),
                    c.requests_path.string(), offset);
      }
      records.push_back(std::move(j));
    }
    std::stable_sort(records.begin(), records.end(), [](const json& a, const json& b) {
      return a.value("index", uint64_t{0}) < b.value("index", uint64_t{0});
    });
    for (const auto& r : records) visit(c.label, r);
  }
}

}  // namespace

Table request_table(const serve::BenchmarkReport& report) {
  std::vector<std::string> label, failure, error;
  std::vector<int64_t> index, success, http_status, prompt_len, expected_output_len, output_tokens,
      usage_prompt_tokens, output_chars, session, turn, chunks;
  std::vector<double> scheduled, start, queue, overhead, ttft, e2el;
  each_request(report, [&](const std::string& case_label, const json& r) {
    label.push_back(case_label);
    index.push_back(r.value("index", int64_t{0}));
    success.push_back(r.value("success", false) ? 1 : 0);
    failure.push_back(r.value("failure", std::string{}));
    error.push_back(r.value("error", std::string{}));
    http_status.push_back(r.value("http_status", int64_t{0}));
    prompt_len.push_back(r.value("prompt_len", int64_t{0}));
    expected_output_len.push_back(r.value("expected_output_len", int64_t{0}));
    output_tokens.push_back(r.value("output_tokens", int64_t{-1}));
    usage_prompt_tokens.push_back(r.value("usage_prompt_tokens", int64_t{-1}));
    output_chars.push_back(r.value("output_chars", int64_t{0}));
    session.push_back(r.value("session", int64_t{-1}));
    turn.push_back(r.value("turn", int64_t{-1}));
    scheduled.push_back(r.value("scheduled_s", 0.0));
    start.push_back(r.value("start_s", 0.0));
    queue.push_back(r.value("queue_s", 0.0));
    overhead.push_back(r.value("client_overhead_s", 0.0));
    ttft.push_back(r.value("ttft_s", 0.0));
    e2el.push_back(r.value("e2el_s", 0.0));
    auto itl = r.find("itl_s");
    chunks.push_back(itl != r.end() && itl->is_array() ? static_cast<int64_t>(itl->size()) : 0);
  });
  // requests.jsonl's keys, in its order; `itls` counts the record's itl_s entries (itl_table has them).
  return {{"case", std::move(label)},
          {"index", std::move(index)},
          {"success", std::move(success)},
          {"failure", std::move(failure)},
          {"error", std::move(error)},
          {"http_status", std::move(http_status)},
          {"prompt_len", std::move(prompt_len)},
          {"expected_output_len", std::move(expected_output_len)},
          {"output_tokens", std::move(output_tokens)},
          {"usage_prompt_tokens", std::move(usage_prompt_tokens)},
          {"output_chars", std::move(output_chars)},
          {"session", std::move(session)},
          {"turn", std::move(turn)},
          {"scheduled_s", std::move(scheduled)},
          {"start_s", std::move(start)},
          {"queue_s", std::move(queue)},
          {"client_overhead_s", std::move(overhead)},
          {"ttft_s", std::move(ttft)},
          {"e2el_s", std::move(e2el)},
          {"itls", std::move(chunks)}};
}

Table itl_table(const serve::BenchmarkReport& report) {
  std::vector<std::string> label;
  std::vector<int64_t> index, chunk;
  std::vector<double> itl;
  each_request(report, [&](const std::string& case_label, const json& r) {
    auto it = r.find("itl_s");
    if (it == r.end() || !it->is_array()) return;
    int64_t k = 0;
    for (const auto& v : *it) {
      label.push_back(case_label);
      index.push_back(r.value("index", int64_t{0}));
      chunk.push_back(k++);
      itl.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
    }
  });
  return {{"case", std::move(label)}, {"index", std::move(index)}, {"chunk", std::move(chunk)},
          {"itl_s", std::move(itl)}};
}

}  // namespace magpie::python_api
