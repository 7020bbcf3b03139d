#include <gtest/gtest.h>

#include "kernel/latency_contract.hpp"

namespace magpie::kernel {
namespace {

TEST(LatencyContract, LastLineWins) {
  auto r = parse_latency_output(
      "warmup\nMAGPIE_LATENCY_JSON: {\"stats\": {\"median_ms\": 9}}\n"
      "MAGPIE_LATENCY_JSON: {\"mode\": \"cuda_graph\", \"kernel_name\": \"k\", "
      "\"stats\": {\"median_ms\": 0.5, \"samples_ms\": [0.4, 0.5, 0.6]}}\ndone\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->success);
  EXPECT_EQ(r->mode, "cuda_graph");
  EXPECT_DOUBLE_EQ(r->median_ms, 0.5);
  EXPECT_EQ(r->samples_ms.size(), 3u);
}

TEST(LatencyContract, ErrorsAndAbsence) {
  EXPECT_FALSE(parse_latency_output("no line here\n").has_value());
  auto err = parse_latency_output("MAGPIE_LATENCY_JSON: {\"error\": \"OOM\"}\n");
  ASSERT_TRUE(err);
  EXPECT_FALSE(err->success);
  EXPECT_EQ(err->error, "OOM");
  auto bad = parse_latency_output("MAGPIE_LATENCY_JSON: {not json\n");
  ASSERT_TRUE(bad);
  EXPECT_FALSE(bad->success);
  // Only a line that starts with the prefix counts.
  EXPECT_FALSE(parse_latency_output("echo MAGPIE_LATENCY_JSON: {}\n").has_value());
  auto median_only = parse_latency_output("MAGPIE_LATENCY_JSON: {\"stats\": {\"p50_ms\": 2}}");
  ASSERT_TRUE(median_only && median_only->success);
  EXPECT_EQ(median_only->samples_ms, std::vector<double>{2});
  // Samples without a median: the median is the samples' (the report said 0 ms before).
  auto samples_only = parse_latency_output("MAGPIE_LATENCY_JSON: {\"stats\": {\"samples_ms\": [4, 1, 3, 2]}}");
  ASSERT_TRUE(samples_only && samples_only->success);
  EXPECT_DOUBLE_EQ(samples_only->median_ms, 2.5);
}

}  // namespace
}  // namespace magpie::kernel
