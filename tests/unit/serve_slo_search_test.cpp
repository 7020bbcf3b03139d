// The SLO search (issue 30): bracketing then bisection to the knee, the noise
// rule of results diff on each probe's runs (within noise: more runs, then
// uncertain, counted as failing), the budget, a run cut short, and a range that
// cannot be searched. The "server" here is a function of the probed value: the
// search logic alone; tests/e2e/test_serving_keys.py runs it against the stub.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/slo_search.hpp"

namespace magpie::serve {
namespace {

// One run whose only term (ttft_p99<=100ms) measured `ttft_ms`.
SearchRun run_with(double ttft_ms, const std::string& label = "case") {
  SearchRun r;
  r.case_label = label;
  auto terms = parse_slo("ttft_p99<=100ms", "--slo");
  r.slo.checks.push_back({terms[0], ttft_ms, ttft_ms <= 100});
  r.slo.met = ttft_ms <= 100;
  r.request_throughput = 1;
  r.completed = 10;
  return r;
}

struct Fake {
  std::function<double(double value, int64_t run)> ttft;
  std::vector<std::pair<double, int64_t>> calls;
  double clock = 0;
  int64_t stop_after = -1;  // runs before a run is cut short
  SearchHooks hooks() {
    SearchHooks h;
    h.measure = [this](double v, int64_t r) -> std::optional<SearchRun> {
      if (stop_after >= 0 && static_cast<int64_t>(calls.size()) >= stop_after) return std::nullopt;
      calls.emplace_back(v, r);
      clock += 10;
      return run_with(ttft(v, r));
    };
    h.now_s = [this] { return clock; };
    return h;
  }
};

SloSearchSettings rate(double lo, double hi, double step) {
  SloSearchSettings s;
  s.min = lo;
  s.max = hi;
  s.step = step;
  s.max_probes = 30;
  return s;
}

TEST(SloSearch, BracketsThenBisectsToTheKneeWithinOneStep) {
  // Passes (50 ms) up to 13.3 req/s, fails (300 ms) above: the knee lies between 13 and 14.
  Fake f;
  f.ttft = [](double v, int64_t) { return v <= 13.3 ? 50.0 : 300.0; };
  auto r = run_slo_search(rate(1, 64, 1), f.hooks());
  EXPECT_EQ(r.status, SearchStatus::kFound);
  ASSERT_TRUE(r.highest_pass && r.lowest_fail);
  EXPECT_LE(*r.highest_pass, 13.3);
  EXPECT_GT(*r.lowest_fail, 13.3);
  EXPECT_LE(*r.lowest_fail - *r.highest_pass, 1.0);
  // Bracketing doubled 1, 2, 4, 8, 16 (fails), then bisected.
  std::vector<double> probed;
  for (const auto& p : r.probes) probed.push_back(p.value);
  EXPECT_EQ(std::vector<double>(probed.begin(), probed.begin() + 5), (std::vector<double>{1, 2, 4, 8, 16}));
  for (const auto& p : r.probes) {
    EXPECT_EQ(p.runs.size(), 2u);  // repeats, none within noise
    EXPECT_EQ(p.verdict, p.value <= 13.3 ? ProbeVerdict::kPass : ProbeVerdict::kFail);
  }
  EXPECT_NE(knee_line(r).find("knee: request rate 13"), std::string::npos) << knee_line(r);
}

TEST(SloSearch, ConcurrencyIsWholeNumbersAndFindsTheExactKnee) {
  Fake f;
  f.ttft = [](double v, int64_t) { return v <= 5 ? 40.0 : 250.0; };
  auto s = rate(1, 32, 0);
  s.variable = SearchVariable::kConcurrency;
  auto r = run_slo_search(s, f.hooks());
  EXPECT_EQ(r.status, SearchStatus::kFound);
  EXPECT_EQ(*r.highest_pass, 5);
  EXPECT_EQ(*r.lowest_fail, 6);
  for (const auto& p : r.probes) EXPECT_EQ(p.value, std::floor(p.value));
}

TEST(SloSearch, AProbeWithinNoiseGetsMoreRunsThenIsUncertainAndCountsAsFailing) {
  // At 4 req/s the runs read 97 and 103 ms against a 100 ms limit: within their own spread.
  Fake f;
  f.ttft = [](double v, int64_t run) {
    if (v < 4) return 50.0;
    if (v == 4) return run % 2 ? 103.0 : 97.0;
    return 400.0;
  };
  auto r = run_slo_search(rate(1, 8, 1), f.hooks());
  const SearchProbe* at4 = nullptr;
  for (const auto& p : r.probes)
    if (p.value == 4) at4 = &p;
  ASSERT_NE(at4, nullptr);
  EXPECT_EQ(at4->runs.size(), 4u);  // max_repeats
  EXPECT_EQ(at4->verdict, ProbeVerdict::kUncertain);
  EXPECT_NEAR(at4->terms[0].noise_floor, 103.0 / 97.0, 1e-9);
  EXPECT_EQ(*r.lowest_fail, 4);  // uncertain counts as failing
  EXPECT_EQ(*r.highest_pass, 3);
  // A clear verdict takes only `repeats` runs.
  for (const auto& p : r.probes) {
    if (p.value != 4) {
      EXPECT_EQ(p.runs.size(), 2u) << p.value;
    }
  }
}

TEST(SloSearch, TheNoiseFloorMakesAValueNearTheLimitUncertainEvenWhenRunsAgree) {
  SearchProbe p;
  p.runs = {run_with(98), run_with(98)};  // 2% under the limit, runs identical
  SloSearchSettings s;
  judge_probe(p, s);  // noise 0.05: F = 1.05
  EXPECT_EQ(p.verdict, ProbeVerdict::kUncertain);
  s.noise = 0.01;
  judge_probe(p, s);
  EXPECT_EQ(p.verdict, ProbeVerdict::kPass);
  p.runs = {run_with(50), run_with(50)};
  p.runs[1].failed = 3;  // a probe that loses requests does not pass
  judge_probe(p, s);
  EXPECT_EQ(p.verdict, ProbeVerdict::kFail);
}

TEST(SloSearch, EndsOnItsBudgetAndKeepsWhatItMeasured) {
  Fake f;
  f.ttft = [](double v, int64_t) { return v <= 13.3 ? 50.0 : 300.0; };
  auto s = rate(1, 64, 0.01);
  s.max_probes = 6;
  auto r = run_slo_search(s, f.hooks());
  EXPECT_EQ(r.status, SearchStatus::kBudget);
  EXPECT_EQ(r.probes.size(), 6u);
  EXPECT_EQ(*r.highest_pass, 12);  // 1,2,4,8,16, then 12
  EXPECT_EQ(*r.lowest_fail, 16);

  Fake g;
  g.ttft = f.ttft;
  s.max_probes = 30;
  s.max_time_s = 45;  // each run takes 10 s on the fake clock: 3 probes of 2 runs start before 45 s
  r = run_slo_search(s, g.hooks());
  EXPECT_EQ(r.status, SearchStatus::kBudget);
  EXPECT_EQ(r.probes.size(), 3u);
}

TEST(SloSearch, ARunCutShortEndsTheSearchKeepingItsProbes) {
  Fake f;
  f.ttft = [](double, int64_t) { return 50.0; };
  f.stop_after = 5;  // two whole probes, then one run of the third
  auto r = run_slo_search(rate(1, 64, 1), f.hooks());
  EXPECT_EQ(r.status, SearchStatus::kInterrupted);
  ASSERT_EQ(r.probes.size(), 3u);
  EXPECT_EQ(r.probes[2].runs.size(), 1u);
  EXPECT_EQ(*r.highest_pass, 2);
}

TEST(SloSearch, ARunThatThrowsKeepsTheProbesAndSaysWhy) {
  // The fifth run throws (as a dataset that no longer reads would): two whole probes and the
  // third's first run are kept, the status says an error stopped it, and the error goes on.
  Fake f;
  f.ttft = [](double, int64_t) { return 50.0; };
  SearchHooks h = f.hooks();
  auto measure = h.measure;
  h.measure = [&](double v, int64_t r) -> std::optional<SearchRun> {
    if (f.calls.size() == 5) throw Error(ErrorKind::kBadFormat, "JSONL line is not a JSON object", "d.jsonl:3");
    return measure(v, r);
  };
  SloSearchResult r;
  EXPECT_THROW(run_slo_search(rate(1, 64, 1), h, r), Error);
  EXPECT_EQ(r.status, SearchStatus::kError);
  ASSERT_EQ(r.probes.size(), 3u);
  EXPECT_EQ(r.probes[2].runs.size(), 1u);
  EXPECT_EQ(*r.highest_pass, 2);
  EXPECT_NE(r.error.find("JSONL line is not a JSON object"), std::string::npos) << r.error;
  EXPECT_NE(knee_line(r).find("stopped by an error after 3 probes"), std::string::npos) << knee_line(r);
  EXPECT_EQ(r.elapsed_s, 50);
}

TEST(SloSearch, TheRangesEnds) {
  Fake f;
  f.ttft = [](double, int64_t) { return 500.0; };
  auto r = run_slo_search(rate(2, 64, 1), f.hooks());
  EXPECT_EQ(r.status, SearchStatus::kNonePass);
  EXPECT_EQ(r.probes.size(), 1u);
  EXPECT_NE(knee_line(r).find("no value in the range meets them"), std::string::npos);
  Fake g;
  g.ttft = [](double, int64_t) { return 5.0; };
  r = run_slo_search(rate(2, 20, 1), g.hooks());
  EXPECT_EQ(r.status, SearchStatus::kAllPass);
  EXPECT_EQ(r.probes.back().value, 20);  // 2, 4, 8, 16, then the high end
}

TEST(SloSearch, ARangeThatCannotBeSearchedIsAUsageError) {
  auto expect_usage = [](SloSearchSettings s, const std::string& says) {
    try {
      check_search(s, "--search-range");
      ADD_FAILURE() << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  expect_usage(rate(8, 2, 0), "is empty");
  expect_usage(rate(0, 2, 0), "must start above 0");
  auto c = rate(1.5, 4, 0);
  c.variable = SearchVariable::kConcurrency;
  expect_usage(c, "whole numbers");
  auto reps = rate(1, 4, 0);
  reps.repeats = 3;
  reps.max_repeats = 2;
  expect_usage(reps, "repeats 3 and max_repeats 2");
  EXPECT_NO_THROW(check_search(rate(1, 1, 0), "--search-range"));
}

TEST(SloSearch, FlagsAndYamlNeedSlosAndOneCase) {
  BenchmarkFlags f;
  f.search = "concurrency";
  f.search_range = "1:8";
  BenchmarkConfig no_slo;
  EXPECT_THROW(apply_flags(no_slo, f, false), Error);  // nothing to meet
  f.slo = "ttft_p99<=1s";
  BenchmarkConfig c;
  apply_flags(c, f, false);
  ASSERT_TRUE(c.client.search);
  EXPECT_EQ(c.client.search->variable, SearchVariable::kConcurrency);
  EXPECT_EQ(c.client.search->max, 8);
  f.concurrency = "2,4";  // two cases
  BenchmarkConfig sweep;
  EXPECT_THROW(apply_flags(sweep, f, false), Error);

  BenchmarkFlags bad;
  bad.search = "request_rate";
  bad.search_range = "8:2";
  BenchmarkConfig d;
  try {
    apply_flags(d, bad, false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("--search-range"), std::string::npos) << e.what();
  }

  auto y = parse_benchmark_yaml(
      "endpoint: http://127.0.0.1:1\nclient:\n  slo: ttft_p99<=1s\n  search: {variable: concurrency, min: 2, max: 16, "
      "repeats: 3, max_probes: 5}\n",
      "b.yaml");
  ASSERT_TRUE(y.client.search);
  EXPECT_EQ(y.client.search->min, 2);
  EXPECT_EQ(y.client.search->repeats, 3);
  EXPECT_EQ(y.client.search->max_repeats, 4);
  EXPECT_EQ(y.client.search->max_probes, 5);
  EXPECT_THROW(parse_benchmark_yaml("client:\n  search: {variable: rate, min: 1, max: 4}\n", "b.yaml"), Error);
  EXPECT_THROW(parse_benchmark_yaml("client:\n  search: {min: 4, max: 1}\n", "b.yaml"), Error);
}

}  // namespace
}  // namespace magpie::serve
