// Load ramps (issue 30 item 5): the spec's forms and its errors, a schedule
// whose counts follow the ramp's rate, the caps of a concurrency ramp, and the
// report's windows.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/load_shape.hpp"

namespace magpie::serve {
namespace {

// Each spec is a usage error naming the option, the spec and `form`.
void expect_refused(LoadRamp (*parse)(const std::string&, const std::string&), const std::string& option,
                    std::initializer_list<const char*> specs, const std::string& form) {
  for (const char* bad : specs) {
    try {
      parse(bad, option);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(option + ": '" + bad + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(form), std::string::npos) << e.what();
    }
  }
}

TEST(RateRamp, FormsAndErrors) {
  auto s = parse_rate_ramp("steps:5,35,6,4", "--rate-ramp");
  EXPECT_TRUE(s.steps);
  EXPECT_EQ(s.windows, 4);
  EXPECT_DOUBLE_EQ(ramp_rate_at(s, 0.1), 5);
  EXPECT_DOUBLE_EQ(ramp_rate_at(s, 2.0), 15);
  EXPECT_DOUBLE_EQ(ramp_rate_at(s, 5.9), 35);
  auto l = parse_rate_ramp("linear:0,20,10", "--rate-ramp");
  EXPECT_FALSE(l.steps);
  EXPECT_EQ(l.windows, 10);
  EXPECT_DOUBLE_EQ(ramp_rate_at(l, 5), 10);
  expect_refused(parse_rate_ramp, "--rate-ramp",
                 {"steps:5,35,6", "linear:1,2", "ramp:1,2,3", "linear:1,x,3", "steps:0,5,6,2", "linear:1,2,0",
                  "steps:1,2,3,1.5", "5,35,6"},
                 "steps:FROM,TO,SECONDS,N");
}

// Near-regular arrivals (burstiness 10000): each step's count is its rate times its length.
TEST(RateRamp, ScheduleFollowsTheRate) {
  auto s = parse_rate_ramp("steps:10,40,8,4", "--rate-ramp");  // 10, 20, 30, 40 req/s, 2 s each
  auto t = ramp_schedule(s, 10000, 1);
  ASSERT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_LT(t.back(), 8.0);
  for (int i = 0; i < 4; ++i) {
    auto n = std::count_if(t.begin(), t.end(), [&](double x) { return x >= 2 * i && x < 2 * (i + 1); });
    EXPECT_NEAR(static_cast<double>(n), 2 * (10 + 10 * i), 1.0) << i;
  }
  // Linear 0 -> 20 over 10 s: 100 arrivals, three times as many in the second half as in the first.
  auto l = ramp_schedule(parse_rate_ramp("linear:0,20,10", "--rate-ramp"), 10000, 1);
  EXPECT_NEAR(static_cast<double>(l.size()), 100, 1);
  auto first = std::count_if(l.begin(), l.end(), [](double x) { return x < 5; });
  EXPECT_NEAR(static_cast<double>(first), 25, 1);
  // Poisson (burstiness 1) keeps the mean.
  auto p = ramp_schedule(parse_rate_ramp("linear:100,100,20", "--rate-ramp"), 1, 7);
  EXPECT_NEAR(static_cast<double>(p.size()), 2000, 150);
}

TEST(RateRamp, WindowsSplitTheCaseByScheduledTime) {
  auto s = parse_rate_ramp("steps:2,4,2,2", "--rate-ramp");
  std::vector<RequestRecord> recs;
  for (double at : {0.0, 0.5, 1.0, 1.25, 1.5, 1.75}) {
    RequestRecord r;
    r.success = true;
    r.scheduled_s = at;
    r.ttft = at < 1 ? 0.01 : 0.5;
    r.latency = r.ttft + 0.01;
    r.output_tokens = 2;
    r.expected_output_len = 2;
    r.itl = {0.01};
    recs.push_back(r);
  }
  auto w = ramp_windows(s, recs, {50, 99}, {}, parse_slo("ttft_p99<=100ms", "--slo"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0].offered_rate, 2);
  EXPECT_DOUBLE_EQ(w[1].offered_rate, 4);
  EXPECT_EQ(w[0].metrics.completed, 2u);
  EXPECT_EQ(w[1].metrics.completed, 4u);
  EXPECT_TRUE(w[0].slo->met);
  EXPECT_FALSE(w[1].slo->met);
}

TEST(RateRamp, ClashesAreUsageErrors) {
  BenchmarkFlags f;
  f.rate_ramp = "steps:1,4,4,4";
  BenchmarkConfig ok;
  ok.endpoint = "http://127.0.0.1:1";
  apply_flags(ok, f, false);
  ASSERT_TRUE(ok.client.rate_ramp);
  for (auto clash : {std::string("duration"), std::string("rate")}) {
    BenchmarkFlags g = f;
    if (clash == "duration") g.duration = 5;
    if (clash == "rate") g.request_rate = "4";
    BenchmarkConfig c;
    EXPECT_THROW(apply_flags(c, g, false), Error) << clash;
  }
  auto y = parse_benchmark_yaml("client:\n  rate_ramp: linear:1,8,30\n", "b.yaml");
  ASSERT_TRUE(y.client.rate_ramp);
  EXPECT_EQ(y.client.rate_ramp->to, 8);
  EXPECT_THROW(parse_benchmark_yaml("client:\n  rate_ramp: up:1,8,30\n", "b.yaml"), Error);
}

TEST(ConcurrencyRamp, FormsErrorsAndCaps) {
  auto s = parse_concurrency_ramp("steps:1,8,8,4", "--concurrency-ramp");  // 1, 3.33, 5.67, 8 -> 1, 3, 6, 8
  EXPECT_TRUE(s.concurrency);
  using C = std::vector<std::pair<double, int64_t>>;
  EXPECT_EQ(concurrency_changes(s), (C{{0, 1}, {2, 3}, {4, 6}, {6, 8}}));
  EXPECT_EQ(ramp_peak_concurrency(s), 8);
  // Linear 1 -> 4 over 6 s: the cap moves where the ramp crosses 1.5, 2.5, 3.5.
  EXPECT_EQ(concurrency_changes(parse_concurrency_ramp("linear:1,4,6", "x")), (C{{0, 1}, {1, 2}, {3, 3}, {5, 4}}));
  EXPECT_EQ(concurrency_changes(parse_concurrency_ramp("linear:4,2,4", "x")), (C{{0, 4}, {1, 3}, {3, 2}}));
  EXPECT_EQ(ramp_peak_concurrency(parse_concurrency_ramp("linear:4,2,4", "x")), 4);
  expect_refused(parse_concurrency_ramp, "--concurrency-ramp",
                 {"steps:0,4,6,2", "linear:1.5,4,6", "steps:1,4,6", "linear:1,4,0", "up:1,4,6"}, "requests in flight");
}

// Windows of a concurrency ramp: the cap's mean and the requests really in flight.
TEST(ConcurrencyRamp, WindowsHoldTargetAndInFlight) {
  auto s = parse_concurrency_ramp("steps:1,2,2,2", "x");
  std::vector<RequestRecord> recs;
  // Window 0: one request at a time, back to back; window 1: two at a time.
  for (double at : {0.0, 0.5, 1.0, 1.0, 1.5, 1.5}) {
    RequestRecord r;
    r.success = true;
    r.scheduled_s = r.start_s = at;
    r.ttft = 0.1;
    r.latency = 0.5;
    r.output_tokens = 2;
    r.expected_output_len = 2;
    r.itl = {0.4};
    recs.push_back(r);
  }
  auto w = ramp_windows(s, recs, {50}, {}, {});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0].target_concurrency, 1);
  EXPECT_DOUBLE_EQ(w[1].target_concurrency, 2);
  EXPECT_DOUBLE_EQ(w[0].mean_in_flight, 1);
  EXPECT_DOUBLE_EQ(w[1].mean_in_flight, 2);
  EXPECT_EQ(w[0].metrics.completed, 2u);
  EXPECT_EQ(w[1].metrics.completed, 4u);
  EXPECT_DOUBLE_EQ(w[0].offered_rate, 0);
  // A linear window straddling a change: the time-weighted mean of the caps.
  auto l = ramp_windows(parse_concurrency_ramp("linear:1,4,6,2", "x"), {}, {50}, {}, {});
  EXPECT_DOUBLE_EQ(l[0].target_concurrency, (1 * 1 + 2 * 2) / 3.0);
  EXPECT_DOUBLE_EQ(l[1].target_concurrency, (3 * 2 + 4 * 1) / 3.0);
}

TEST(ConcurrencyRamp, ClashesAreUsageErrors) {
  BenchmarkFlags f;
  f.concurrency_ramp = "steps:1,8,8,4";
  BenchmarkConfig ok;
  ok.endpoint = "http://127.0.0.1:1";
  apply_flags(ok, f, false);
  ASSERT_TRUE(ok.client.concurrency_ramp);
  ASSERT_EQ(ok.cases().size(), 1u);
  EXPECT_EQ(ok.cases().front().concurrency, 8);  // named by the ramp's peak
  for (auto clash : {"duration", "rate", "concurrency", "num_prompts", "rate_ramp", "sessions"}) {
    BenchmarkFlags g = f;
    const std::string k = clash;
    if (k == "duration") g.duration = 5;
    if (k == "rate") g.request_rate = "4";
    if (k == "concurrency") g.concurrency = "4";
    if (k == "num_prompts") g.num_prompts = "40";
    if (k == "rate_ramp") g.rate_ramp = "steps:1,4,4,4";
    if (k == "sessions") g.dataset = "synthetic_sessions";
    BenchmarkConfig c;
    c.endpoint = "http://127.0.0.1:1";
    try {
      apply_flags(c, g, false);
      ADD_FAILURE() << clash;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << clash;
      EXPECT_NE(std::string(e.what()).find("--concurrency-ramp 'steps:1,8,8,4' cannot be combined"), std::string::npos)
          << e.what();
    }
  }
  auto y = parse_benchmark_yaml("client:\n  concurrency_ramp: linear:1,16,30\n", "b.yaml");
  ASSERT_TRUE(y.client.concurrency_ramp);
  EXPECT_EQ(y.client.concurrency_ramp->to, 16);
  EXPECT_THROW(parse_benchmark_yaml("client:\n  concurrency_ramp: linear:1,2.5,30\n", "b.yaml"), Error);
}

}  // namespace
}  // namespace magpie::serve
