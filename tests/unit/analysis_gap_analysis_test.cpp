#include "analysis/gap_analysis.hpp"

#include <gtest/gtest.h>

namespace magpie::analysis {
namespace {

TEST(FormatInputDims, MatchesMagpieShapeText) {
  EXPECT_EQ(format_input_dims("[[5, 2880], [2880, 201088], []]"), "[5,2880]x[2880,201088]");
  EXPECT_EQ(format_input_dims("[[], []]"), "");
  EXPECT_EQ(format_input_dims("[[16]]"), "[16]");
}

TEST(MakeRows, PercentagesCumulateAndTruncateAfterTotals) {
  std::vector<KernelStats> ks(3);
  ks[0].name = "a";
  ks[0].calls = 2;
  ks[0].total_us = 6;
  ks[0].durations_us = {2, 4};
  ks[1].name = "b";
  ks[1].calls = 1;
  ks[1].total_us = 3;
  ks[1].durations_us = {3};
  ks[2].name = "c";
  ks[2].calls = 1;
  ks[2].total_us = 1;
  ks[2].durations_us = {1};
  auto rows = make_rows(ks, 10, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].pct_total, 60);
  EXPECT_DOUBLE_EQ(rows[1].cumulative_pct, 90);
  EXPECT_DOUBLE_EQ(rows[0].median_us, 3);
  EXPECT_DOUBLE_EQ(rows[0].avg_us, 3);
  EXPECT_NEAR(rows[0].std_us, 1.41421356, 1e-6);
}

}  // namespace
}  // namespace magpie::analysis
