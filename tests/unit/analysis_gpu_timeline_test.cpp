#include "analysis/gpu_timeline.hpp"

#include <gtest/gtest.h>

namespace magpie::analysis {
namespace {

TEST(GpuTimeline, UnionsOverlapsAcrossStreams) {
  // compute: [0,10) and [5,20) overlap → 20 ns; comm [15,30) → exposed 10 ns;
  // memcpy [40,50) fully exposed; idle gap [30,40).
  auto t = compute_gpu_timeline({{0, 10}, {5, 20}}, {{15, 30}}, {{40, 50}});
  EXPECT_DOUBLE_EQ(t.span_us, 0.050);
  EXPECT_DOUBLE_EQ(t.busy_us, 0.040);
  EXPECT_DOUBLE_EQ(t.idle_us, 0.010);
  EXPECT_DOUBLE_EQ(t.computation_us, 0.020);
  EXPECT_DOUBLE_EQ(t.exposed_communication_us, 0.010);
  EXPECT_DOUBLE_EQ(t.exposed_memcpy_us, 0.010);
}

TEST(GpuTimeline, MemcpyHiddenUnderComputeIsNotExposed) {
  auto t = compute_gpu_timeline({{0, 100}}, {}, {{10, 20}, {90, 110}});
  EXPECT_DOUBLE_EQ(t.exposed_memcpy_us, 0.010);
  EXPECT_DOUBLE_EQ(t.busy_us, 0.110);
}

TEST(GpuTimeline, EmptyIsZero) {
  auto t = compute_gpu_timeline({}, {}, {});
  EXPECT_EQ(t.busy_us, 0);
  EXPECT_EQ(t.span_us, 0);
}

TEST(MergeIntervals, MergesTouchingAndNested) {
  std::vector<Interval> v{{5, 6}, {0, 3}, {3, 4}, {1, 2}};
  EXPECT_EQ(merge_intervals(v), 5);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], (Interval{0, 4}));
}

}  // namespace
}  // namespace magpie::analysis
