// cupti_kind auto's decision from the probe rounds (pure; the evaluator side is
// in kernel_evaluator_test.cpp).
#include <gtest/gtest.h>

#include "kernel/cupti_choice.hpp"

namespace magpie::kernel {
namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(CuptiChoice, ProbeOnlyForAutoWithTheLibrary) {
  EXPECT_TRUE(needs_cupti_probe("auto", true));
  EXPECT_FALSE(needs_cupti_probe("auto", false));  // CI, AMD: nothing changes
  EXPECT_FALSE(needs_cupti_probe("serial", true));
  EXPECT_FALSE(needs_cupti_probe("concurrent", true));
}

TEST(CuptiChoice, OverlapInAnyProbeKeepsConcurrent) {
  auto c = choose_cupti_kind("auto", {{"single", true, 0}, {"two_streams", true, 1500}});
  EXPECT_EQ(c.kind, "concurrent");
  EXPECT_EQ(c.chosen_by, "auto");
  EXPECT_EQ(c.probe_overlap_ns, 1500);
  EXPECT_TRUE(has(c.reason, "1500 ns")) << c.reason;
  EXPECT_TRUE(has(c.reason, "two_streams")) << c.reason;
  EXPECT_TRUE(has(c.reason, "per-block instrumentation")) << c.reason;
}

TEST(CuptiChoice, NoOverlapChoosesSerial) {
  auto c = choose_cupti_kind("auto", {{"a", true, 0}, {"b", true, 0}});
  EXPECT_EQ(c.kind, "serial");
  EXPECT_EQ(c.chosen_by, "auto");
  EXPECT_EQ(c.probe_overlap_ns, 0);
  EXPECT_TRUE(has(c.reason, "no kernels overlapped across streams")) << c.reason;
  EXPECT_TRUE(has(c.reason, "serializing changes nothing")) << c.reason;
  // Up to the threshold is timestamp skew, not concurrency; just above it is.
  EXPECT_EQ(choose_cupti_kind("auto", {{"a", true, kProbeOverlapThresholdNs}}).kind, "serial");
  EXPECT_EQ(choose_cupti_kind("auto", {{"a", true, kProbeOverlapThresholdNs + 1}}).kind, "concurrent");
}

TEST(CuptiChoice, UnfinishedProbesDoNotDecide) {
  // A failed probe's trace says nothing about its streams.
  EXPECT_EQ(choose_cupti_kind("auto", {{"a", false, 5000}, {"b", true, 0}}).kind, "serial");
  auto none = choose_cupti_kind("auto", {{"a", false, 0}});
  EXPECT_EQ(none.kind, "concurrent");
  EXPECT_FALSE(none.probe_overlap_ns.has_value());
  EXPECT_TRUE(has(none.reason, "no first round finished")) << none.reason;
}

TEST(CuptiChoice, ExplicitKindIsTakenAsConfigured) {
  for (const char* kind : {"serial", "concurrent"}) {
    auto c = choose_cupti_kind(kind, {});
    EXPECT_EQ(c.kind, kind);
    EXPECT_EQ(c.chosen_by, "config");
    EXPECT_FALSE(c.probe_overlap_ns.has_value());
    EXPECT_TRUE(has(c.reason, "--cupti-kind")) << c.reason;
  }
  auto off = no_cupti_choice("auto", "no CUPTI library");
  EXPECT_TRUE(off.kind.empty());
  EXPECT_EQ(off.chosen_by, "auto");
  EXPECT_TRUE(has(describe(off), "not used")) << describe(off);
  EXPECT_EQ(no_cupti_choice("serial", "x").chosen_by, "config");
}

}  // namespace
}  // namespace magpie::kernel

namespace magpie::kernel {
namespace {

// The costs behind auto when no streams overlap (constants measured on an H200):
// serial adds a fixed ~1.6 us per kernel, concurrent ~56 ps per block.
TEST(CuptiChoiceCosts, ManyBlocksPerKernelPickSerial) {
  // vector_add: 150 launches of 262,144 blocks: concurrent ~2.2 ms vs serial 0.24 ms.
  auto c = choose_cupti_kind("auto", {{"vector_add", true, 0, 150, 150 * 262144.0}});
  EXPECT_EQ(c.kind, "serial");
  EXPECT_NE(c.reason.find("150 timed kernels"), std::string::npos) << c.reason;
}

TEST(CuptiChoiceCosts, FewBlocksPerKernelPickConcurrent) {
  // A softmax over 4096 rows, one block per row: 0.23 us of instrumentation vs 1.6 us.
  auto c = choose_cupti_kind("auto", {{"softmax", true, 0, 1000, 1000 * 4096.0}});
  EXPECT_EQ(c.kind, "concurrent");
  EXPECT_NE(c.reason.find("concurrent chosen"), std::string::npos) << c.reason;
}

TEST(CuptiChoiceCosts, CostsAddUpOverImplementationsAndOverlapStillWins) {
  // One many-block and one few-block implementation: the totals decide, for both.
  auto c = choose_cupti_kind("auto", {{"a", true, 0, 100, 100 * 1e6}, {"b", true, 0, 100, 100 * 10.0}});
  EXPECT_EQ(c.kind, "serial");
  // Overlap keeps concurrent whatever the costs say.
  auto o = choose_cupti_kind("auto", {{"a", true, 5000, 100, 100 * 1e6}});
  EXPECT_EQ(o.kind, "concurrent");
  // An unfinished probe's shape does not count.
  auto u = choose_cupti_kind("auto", {{"a", false, 0, 100, 100 * 1e6}, {"b", true, 0, 100, 100 * 10.0}});
  EXPECT_EQ(u.kind, "concurrent");
}

}  // namespace
}  // namespace magpie::kernel
