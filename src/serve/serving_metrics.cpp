#include "serve/serving_metrics.hpp"

#include <algorithm>
#include <cmath>

#include "core/statistics.hpp"

namespace magpie::serve {

namespace {

std::string percentile_word(double p) {
  // vLLM: "99" for 99.0, "99.9" for 99.9.
  if (std::floor(p) == p) return std::to_string(static_cast<int64_t>(p));
  auto s = nlohmann::json(p).dump();
  return s;
}

void put_stats(nlohmann::json& j, const std::string& name, const MetricStats& s) {
  j["mean_" + name + "_ms"] = s.mean_ms;
  j["median_" + name + "_ms"] = s.median_ms;
  j["std_" + name + "_ms"] = s.std_ms;
  for (auto [p, v] : s.percentiles_ms) j["p" + percentile_word(p) + "_" + name + "_ms"] = v;
}

}  // namespace

MetricStats metric_stats(std::vector<double> seconds, const std::vector<double>& percentiles) {
  MetricStats s;
  s.count = seconds.size();
  if (seconds.empty()) seconds.push_back(0.0);  // np.mean(xs or 0)
  std::sort(seconds.begin(), seconds.end());
  double sum = 0;
  for (double x : seconds) sum += x;
  double mean = sum / static_cast<double>(seconds.size());
  double ss = 0;
  for (double x : seconds) ss += (x - mean) * (x - mean);
  s.mean_ms = mean * 1000;
  s.std_ms = std::sqrt(ss / static_cast<double>(seconds.size())) * 1000;  // ddof=0
  s.median_ms = stats::median_sorted(seconds) * 1000;
  for (double p : percentiles) s.percentiles_ms[p] = stats::percentile_sorted(seconds, p) * 1000;
  return s;
}

ServingMetrics compute_metrics(const MetricsInput& in) {
  ServingMetrics m;
  m.duration_s = in.duration_s;
  m.percentiles = in.percentiles;
  m.peak_concurrency = in.peak_concurrency;
  std::vector<double> ttfts, tpots, all_tpots, itls, e2els, itl_tok, queue, overhead;
  const auto& records = *in.records;
  for (const auto& r : records) {
    queue.push_back(r.queue_s);
    overhead.push_back(r.overhead_s);
    if (!r.success) {
      ++m.failed;
      ++m.failures_by_reason[to_string(r.failure)];
      continue;
    }
    ++m.completed;
    // vLLM: usage.completion_tokens, else 1 without a tokenizer.
    int64_t out = r.output_tokens > 0 ? r.output_tokens : 1;
    m.total_output += out;
    m.total_input += r.usage_prompt_tokens >= 0 ? r.usage_prompt_tokens : r.prompt_len;
    double tpot = 0;
    if (out > 1) {
      tpot = (r.latency - r.ttft) / static_cast<double>(out - 1);
      tpots.push_back(tpot);
    }
    all_tpots.push_back(tpot);
    itls.insert(itls.end(), r.itl.begin(), r.itl.end());
    if (r.chunk_tokens.size() == r.itl.size() + 1) {
      for (size_t i = 0; i < r.itl.size(); ++i)
        if (r.chunk_tokens[i + 1] > 0) itl_tok.push_back(r.itl[i] / r.chunk_tokens[i + 1]);
    }
    ttfts.push_back(r.ttft);
    e2els.push_back(r.latency);
  }
  if (in.slo.any()) {
    m.has_goodput = true;
    size_t good = 0;
    for (size_t i = 0; i < ttfts.size(); ++i) {
      bool ok = true;
      if (in.slo.ttft_ms && ttfts[i] > *in.slo.ttft_ms / 1000) ok = false;
      if (in.slo.tpot_ms && all_tpots[i] > *in.slo.tpot_ms / 1000) ok = false;
      if (in.slo.e2el_ms && e2els[i] > *in.slo.e2el_ms / 1000) ok = false;
      good += ok;
    }
    m.request_goodput = in.duration_s > 0 ? static_cast<double>(good) / in.duration_s : 0;
  }
  if (in.duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / in.duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / in.duration_s;
    m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / in.duration_s;
  }
  // vLLM's peak figures: tokens and active requests per one-second bucket
  // from the first successful start (token times rebuilt from ttft + itl).
  double t0 = INFINITY, t1 = -INFINITY;
  for (const auto& r : records)
    if (r.success) {
      t0 = std::min(t0, r.start_s);
      t1 = std::max(t1, r.start_s + r.latency);
    }
  if (std::isfinite(t0)) {
    auto buckets = static_cast<size_t>(std::ceil(t1 - t0)) + 1;
    std::vector<double> tokens(buckets, 0);
    std::vector<int64_t> active(buckets, 0);
    for (const auto& r : records) {
      if (!r.success) continue;
      double t = r.start_s + r.ttft;
      auto add = [&](double at) {
        auto b = static_cast<int64_t>(at - t0);
        if (b >= 0 && static_cast<size_t>(b) < buckets) tokens[static_cast<size_t>(b)] += 1;
      };
      add(t);
      for (double gap : r.itl) add(t += gap);
      auto s0 = static_cast<size_t>(r.start_s - t0);
      auto s1 = static_cast<size_t>(r.start_s + r.latency - t0);
      for (size_t s = s0; s <= s1 && s < buckets; ++s) ++active[s];
    }
    m.max_output_tokens_per_s = *std::max_element(tokens.begin(), tokens.end());
    m.max_concurrent_requests = *std::max_element(active.begin(), active.end());
  }
  m.ttft = metric_stats(std::move(ttfts), in.percentiles);
  m.tpot = metric_stats(std::move(tpots), in.percentiles);
  m.itl = metric_stats(std::move(itls), in.percentiles);
  m.e2el = metric_stats(std::move(e2els), in.percentiles);
  m.itl_per_token = metric_stats(std::move(itl_tok), in.percentiles);
  m.client_queue = metric_stats(std::move(queue), in.percentiles);
  m.client_overhead = metric_stats(std::move(overhead), in.percentiles);
  std::vector<double> lateness;
  lateness.reserve(records.size());
  for (const auto& r : records) lateness.push_back(std::max(0.0, r.start_s - r.scheduled_s));
  m.send_lateness = metric_stats(std::move(lateness), in.percentiles);
  // Reasoning: the first reasoning and the first answer token apart (TTFT is whichever came first).
  ReasoningMetrics rm;
  std::vector<double> first_reasoning, first_output;
  for (const auto& r : records) {
    if (!r.success || (r.reasoning_chunks == 0 && r.reasoning_tokens < 0)) continue;
    ++rm.requests;
    rm.reasoning_tokens += r.reasoning_tokens >= 0 ? r.reasoning_tokens : r.reasoning_chunks;
    if (r.first_reasoning_s >= 0) first_reasoning.push_back(r.first_reasoning_s);
    if (r.first_content_s >= 0) first_output.push_back(r.first_content_s);
  }
  if (rm.requests > 0) {
    rm.first_reasoning = metric_stats(std::move(first_reasoning), in.percentiles);
    rm.first_output = metric_stats(std::move(first_output), in.percentiles);
    m.reasoning = std::move(rm);
  }
  // TTFT by turn index: where a prefix cache shows (later turns resend a cached history).
  std::map<int32_t, std::pair<std::vector<double>, std::vector<double>>> turns;  // ttft, input
  std::map<int32_t, size_t> turn_failed;
  for (const auto& r : records) {
    if (r.turn < 0) continue;
    if (!r.success) {
      ++turn_failed[r.turn];
      turns[r.turn];
      continue;
    }
    turns[r.turn].first.push_back(r.ttft);
    turns[r.turn].second.push_back(
        static_cast<double>(r.usage_prompt_tokens >= 0 ? r.usage_prompt_tokens : r.prompt_len));
  }
  for (auto& [turn, v] : turns) {
    TurnMetrics t;
    t.turn = turn;
    t.completed = v.first.size();
    t.failed = turn_failed[turn];
    double sum = 0;
    for (double x : v.second) sum += x;
    t.mean_input_tokens = v.second.empty() ? 0 : sum / static_cast<double>(v.second.size());
    t.ttft = metric_stats(std::move(v.first), in.percentiles);
    m.by_turn.push_back(std::move(t));
  }
  return m;
}

nlohmann::json vllm_result_json(const ServingMetrics& m, const std::vector<RequestRecord>& records,
                                bool detailed) {
  nlohmann::json j{
      {"duration", m.duration_s},
      {"completed", m.completed},
      {"failed", m.failed},
      {"total_input_tokens", m.total_input},
      {"total_output_tokens", m.total_output},
      {"request_throughput", m.request_throughput},
      {"request_goodput", m.has_goodput ? nlohmann::json(m.request_goodput) : nlohmann::json()},
      {"output_throughput", m.output_throughput},
      {"total_token_throughput", m.total_token_throughput},
      {"max_output_tokens_per_s", m.max_output_tokens_per_s},
      {"max_concurrent_requests", m.max_concurrent_requests}};
  put_stats(j, "ttft", m.ttft);
  put_stats(j, "tpot", m.tpot);
  put_stats(j, "itl", m.itl);
  put_stats(j, "e2el", m.e2el);
  put_stats(j, "client_queue_time", m.client_queue);
  if (detailed) {
    auto& input_lens = j["input_lens"] = nlohmann::json::array();
    auto& output_lens = j["output_lens"] = nlohmann::json::array();
    auto& ttfts = j["ttfts"] = nlohmann::json::array();
    auto& itls = j["itls"] = nlohmann::json::array();
    auto& latencies = j["latencies"] = nlohmann::json::array();
    auto& starts = j["start_times"] = nlohmann::json::array();
    auto& queues = j["queue_times"] = nlohmann::json::array();
    auto& errors = j["errors"] = nlohmann::json::array();
    for (const auto& r : records) {
      input_lens.push_back(r.usage_prompt_tokens >= 0 ? r.usage_prompt_tokens : r.prompt_len);
      output_lens.push_back(r.success ? std::max<int64_t>(r.output_tokens, 1) : 0);
      ttfts.push_back(r.ttft);
      itls.push_back(r.itl);
      latencies.push_back(r.latency);
      starts.push_back(r.start_s);
      queues.push_back(r.queue_s);
      errors.push_back(r.error);
    }
  }
  return j;
}

}  // namespace magpie::serve
