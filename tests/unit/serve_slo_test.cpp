// `--slo` (issue 30): terms parsed with their units, a bad string named with
// the option and the accepted form, and a case checked against every term.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/slo.hpp"

namespace magpie::serve {
namespace {

TEST(Slo, TermsWithUnitsAndStatistics) {
  auto t = parse_slo("ttft_p99<=2s, tpot_p50<=50ms,e2el_mean<=1500us,itl_p99.9<=30ms", "--slo");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].metric, "ttft");
  EXPECT_DOUBLE_EQ(t[0].percentile, 99);
  EXPECT_DOUBLE_EQ(t[0].limit_ms, 2000);
  EXPECT_EQ(t[1].stat, "median");
  EXPECT_DOUBLE_EQ(t[1].limit_ms, 50);
  EXPECT_EQ(t[2].stat, "mean");
  EXPECT_DOUBLE_EQ(t[2].limit_ms, 1.5);
  EXPECT_DOUBLE_EQ(t[3].percentile, 99.9);
  EXPECT_EQ(slo_percentiles(t), (std::vector<double>{99, 99.9}));
  auto g = slo_goodput_limits(t);
  EXPECT_EQ(g.ttft_ms, 2000);
  EXPECT_EQ(g.tpot_ms, 50);
  EXPECT_EQ(g.e2el_ms, 1.5);
}

TEST(Slo, ABadStringNamesTheOptionAndTheForm) {
  for (const char* bad : {"ttft_p99<2s", "ttft_p99<=2", "latency_p99<=2s", "ttft_p100<=2s", "ttft_max<=2s",
                          "ttft_p99<=-1s", "ttft_p99<=2s,", "ttftp99<=2s", "ttft_p99<=fast s"}) {
    try {
      parse_slo(bad, "--slo");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      std::string what = e.what();
      EXPECT_NE(what.find("--slo"), std::string::npos) << what;
      EXPECT_NE(what.find("ttft_p99<=2s,tpot_p50<=50ms"), std::string::npos) << what;
    }
  }
  BenchmarkFlags f;
  f.slo = "ttft<=2s";
  BenchmarkConfig c0;
  EXPECT_THROW(apply_flags(c0, f, false), Error);
  try {
    parse_benchmark_yaml("model: m\nclient:\n  slo: ttft_p99\n", "b.yaml");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b.yaml:3"), std::string::npos) << e.what();
  }
  auto c = parse_benchmark_yaml("model: m\nclient:\n  slo: ttft_p99<=2s\n", "b.yaml");
  EXPECT_TRUE(c.unknown_keys.empty());
  EXPECT_EQ(c.client.slo_terms.size(), 1u);
}

TEST(Slo, ACaseMeetsItsSlosWhenEveryTermHolds) {
  ServingMetrics m;
  m.completed = 10;
  m.ttft.count = m.tpot.count = 10;
  m.ttft.percentiles_ms[99] = 1900;
  m.tpot.median_ms = 60;
  auto r = evaluate_slo(parse_slo("ttft_p99<=2s,tpot_p50<=50ms", "--slo"), m);
  ASSERT_EQ(r.checks.size(), 2u);
  EXPECT_TRUE(r.checks[0].met);
  EXPECT_DOUBLE_EQ(r.checks[0].value_ms, 1900);
  EXPECT_FALSE(r.checks[1].met);
  EXPECT_FALSE(r.met);
  m.tpot.median_ms = 50;
  EXPECT_TRUE(evaluate_slo(parse_slo("ttft_p99<=2s,tpot_p50<=50ms", "--slo"), m).met);
  EXPECT_FALSE(evaluate_slo(parse_slo("ttft_p90<=2s", "--slo"), m).met);  // a percentile not computed
  m.completed = 0;
  EXPECT_FALSE(evaluate_slo(parse_slo("ttft_p99<=2s", "--slo"), m).met);  // nothing completed
}

}  // namespace
}  // namespace magpie::serve
