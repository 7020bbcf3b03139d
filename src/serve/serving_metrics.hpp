#pragma once
// Serving metrics with vLLM bench serve's definitions (docs/REFERENCE_FACTS.md §5), so
// numbers agree across tools: TTFT, TPOT = (E2EL−TTFT)/(out−1), ITL per
// chunk, E2EL; mean, median, population std (numpy's np.std) and linear-
// interpolated percentiles; throughputs over the run's duration; goodput.
// Plus ours: failures by reason, peak concurrency, client queue time and
// the client's own overhead.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/request_record.hpp"

namespace magpie::serve {

struct MetricStats {
  size_t count = 0;
  double mean_ms = 0, median_ms = 0, std_ms = 0;
  std::map<double, double> percentiles_ms;  // p → value
};
// Values in seconds → stats in ms; an empty list gives zeros, as np.mean([0]).
MetricStats metric_stats(std::vector<double> seconds, const std::vector<double>& percentiles);

struct GoodputSlo {  // milliseconds; absent = not checked
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// Session workloads: one turn index's requests (turn 0 is every session's first).
struct TurnMetrics {
  int32_t turn = 0;
  size_t completed = 0, failed = 0;
  double mean_input_tokens = 0;  // the whole history the turn sent
  MetricStats ttft;
};

// Reasoning models: requests whose stream carried reasoning text.
struct ReasoningMetrics {
  size_t requests = 0;               // successful requests with reasoning
  int64_t reasoning_tokens = 0;      // usage's reasoning_tokens, else reasoning chunks, summed
  MetricStats first_reasoning;       // start -> the first reasoning text
  MetricStats first_output;          // start -> the first answer text (the time to first output token)
};

struct ServingMetrics {
  double duration_s = 0;
  size_t completed = 0, failed = 0;
  int64_t total_input = 0, total_output = 0;
  double request_throughput = 0, request_goodput = 0, output_throughput = 0,
         total_token_throughput = 0;
  double max_output_tokens_per_s = 0;
  int64_t max_concurrent_requests = 0;  // vLLM's per-second-bucket definition
  int64_t peak_concurrency = 0;         // ours: the most requests actually in flight
  MetricStats ttft, tpot, itl, e2el, itl_per_token, client_queue, client_overhead;
  // Ours: how late each request left against its schedule (start − scheduled,
  // queueing on the concurrency cap included): a fixed schedule's accuracy.
  MetricStats send_lateness;
  std::vector<TurnMetrics> by_turn;  // empty unless the records carry turns
  std::optional<ReasoningMetrics> reasoning;  // set when some request streamed reasoning
  std::map<std::string, size_t> failures_by_reason;
  std::vector<double> percentiles;
  bool has_goodput = false;
};

struct MetricsInput {
  const std::vector<RequestRecord>* records = nullptr;  // measured requests only (no warm-ups)
  double duration_s = 0;
  std::vector<double> percentiles{50, 90, 95, 99};
  GoodputSlo slo;
  int64_t peak_concurrency = 0;
};

ServingMetrics compute_metrics(const MetricsInput& input);

// vLLM bench serve's result keys (duration, completed, failed, ..., mean_ttft_ms,
// p99_itl_ms, ...), with the per-request arrays when `detailed`.
nlohmann::json vllm_result_json(const ServingMetrics& m, const std::vector<RequestRecord>& records,
                                bool detailed);

}  // namespace magpie::serve
