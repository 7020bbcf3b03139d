// Serving metrics against hand-computed values with vLLM bench serve's
// definitions (population std, linear-interpolated percentiles, TPOT from
// usage tokens, per-chunk ITL) and its result keys.
#include <gtest/gtest.h>

#include <cmath>

#include "serve/arrival_schedule.hpp"
#include "serve/serving_metrics.hpp"

namespace magpie::serve {
namespace {

RequestRecord ok(double start, double ttft, std::vector<double> itl, int64_t out, int64_t in) {
  RequestRecord r;
  r.success = true;
  r.start_s = start;
  r.ttft = ttft;
  r.itl = std::move(itl);
  double lat = ttft;
  for (double x : r.itl) lat += x;
  r.latency = lat;
  r.output_tokens = out;
  r.prompt_len = in;
  return r;
}

TEST(ServingMetrics, MatchesVllmDefinitions) {
  std::vector<RequestRecord> rs;
  rs.push_back(ok(0.0, 0.1, {0.02, 0.02, 0.02}, 4, 10));
  rs.push_back(ok(0.5, 0.3, {0.04}, 2, 20));
  RequestRecord bad;
  bad.failure = FailureReason::kStreamError;
  rs.push_back(bad);
  MetricsInput in;
  in.records = &rs;
  in.duration_s = 2.0;
  in.slo.ttft_ms = 200;
  auto m = compute_metrics(in);
  EXPECT_EQ(m.completed, 2u);
  EXPECT_EQ(m.failed, 1u);
  EXPECT_EQ(m.failures_by_reason.at("stream_error"), 1u);
  EXPECT_EQ(m.total_input, 30);
  EXPECT_EQ(m.total_output, 6);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 18.0);
  EXPECT_DOUBLE_EQ(m.request_goodput, 0.5);  // only the first meets TTFT ≤ 200 ms
  EXPECT_NEAR(m.ttft.mean_ms, 200, 1e-9);
  EXPECT_NEAR(m.ttft.std_ms, 100, 1e-9);  // population std of {100, 300}
  // TPOT: (0.16-0.1)/3 = 20 ms and (0.34-0.3)/1 = 40 ms.
  EXPECT_NEAR(m.tpot.mean_ms, 30, 1e-9);
  // ITL pooled per chunk: {20,20,20,40}; p90 by linear interpolation = 34.
  EXPECT_NEAR(m.itl.percentiles_ms.at(90), 34, 1e-9);
  EXPECT_NEAR(m.itl.median_ms, 20, 1e-9);
  EXPECT_NEAR(m.e2el.mean_ms, (160.0 + 340.0) / 2, 1e-9);
  // Both active in second 0 → vLLM's max_concurrent_requests = 2.
  EXPECT_EQ(m.max_concurrent_requests, 2);
  EXPECT_DOUBLE_EQ(m.max_output_tokens_per_s, 6);
}

TEST(ServingMetrics, EmptyIsZeroNotNan) {
  std::vector<RequestRecord> rs;
  MetricsInput in;
  in.records = &rs;
  in.duration_s = 1;
  auto m = compute_metrics(in);
  EXPECT_EQ(m.ttft.mean_ms, 0);
  EXPECT_EQ(m.ttft.percentiles_ms.at(99), 0);
}

TEST(ServingMetrics, MissingUsageCountsOneToken) {
  std::vector<RequestRecord> rs{ok(0, 0.1, {0.1}, -1, 5)};
  MetricsInput in;
  in.records = &rs;
  in.duration_s = 1;
  auto m = compute_metrics(in);
  EXPECT_EQ(m.total_output, 1);
  EXPECT_EQ(m.tpot.count, 0u);  // out = 1: no TPOT sample
}

TEST(ServingMetrics, VllmResultKeys) {
  std::vector<RequestRecord> rs{ok(0, 0.1, {0.1}, 2, 5)};
  MetricsInput in;
  in.records = &rs;
  in.duration_s = 1;
  in.percentiles = {50, 99, 99.9};
  auto j = vllm_result_json(compute_metrics(in), rs, true);
  for (const char* k : {"duration",
                        "completed",
                        "failed",
                        "total_input_tokens",
                        "total_output_tokens",
                        "request_throughput",
                        "request_goodput",
                        "output_throughput",
                        "total_token_throughput",
                        "mean_ttft_ms",
                        "median_ttft_ms",
                        "std_ttft_ms",
                        "p99_ttft_ms",
                        "p99.9_ttft_ms",
                        "mean_tpot_ms",
                        "p50_itl_ms",
                        "p99_e2el_ms",
                        "input_lens",
                        "output_lens",
                        "ttfts",
                        "itls",
                        "errors",
                        "max_concurrent_requests",
                        "max_output_tokens_per_s"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["request_goodput"].is_null());
}

TEST(ArrivalSchedule, InfiniteRateSendsAllAtZero) {
  auto o = arrival_offsets(5, {});
  for (double x : o) EXPECT_EQ(x, 0);
}

TEST(ArrivalSchedule, PoissonMeanRateAndAbsoluteSchedule) {
  ArrivalOptions a;
  a.request_rate = 100;
  a.seed = 7;
  auto o = arrival_offsets(20000, a);
  EXPECT_EQ(o.front(), 0);
  EXPECT_TRUE(std::is_sorted(o.begin(), o.end()));
  EXPECT_NEAR(o.back() / 20000, 0.01, 0.0005);  // mean gap 1/rate
}

TEST(ArrivalSchedule, BurstinessChangesDispersionNotRate) {
  auto cv = [](double burstiness) {
    ArrivalOptions a;
    a.request_rate = 50;
    a.burstiness = burstiness;
    a.seed = 3;
    auto o = arrival_offsets(20001, a);
    std::vector<double> gaps;
    for (size_t i = 1; i < o.size(); ++i) gaps.push_back(o[i] - o[i - 1]);
    double mean = 0, ss = 0;
    for (double g : gaps) mean += g;
    mean /= static_cast<double>(gaps.size());
    for (double g : gaps) ss += (g - mean) * (g - mean);
    EXPECT_NEAR(mean, 0.02, 0.001);
    return std::sqrt(ss / static_cast<double>(gaps.size())) / mean;
  };
  EXPECT_NEAR(cv(1.0), 1.0, 0.05);  // Poisson: CV 1
  EXPECT_NEAR(cv(4.0), 0.5, 0.05);  // gamma shape k: CV 1/sqrt(k)
  EXPECT_NEAR(cv(0.25), 2.0, 0.15);
}

TEST(ArrivalSchedule, DurationBounded) {
  ArrivalOptions a;
  a.request_rate = 10;
  auto o = arrival_offsets_for(5.0, a);
  EXPECT_GT(o.size(), 25u);
  EXPECT_LT(o.size(), 80u);
  EXPECT_LT(o.back(), 5.0);
}

}  // namespace
}  // namespace magpie::serve
