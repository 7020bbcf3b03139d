// Ranking fixes by predicted end-to-end gain (critical_path_advice): the
// order rule on summaries whose figures are set by hand, then the whole
// summary on real traces from tests/data, and suggest_optimizations reading it.
#include <gtest/gtest.h>

#include <filesystem>

#include "advice/suggestions.hpp"
#include "analysis/critical_path_advice.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {
namespace {

CriticalPathSummary summary(const std::string& bound, double gpu_busy_pct) {
  CriticalPathSummary s;
  s.bound = bound;
  s.gpu_busy_pct = gpu_busy_pct;
  s.whole.length_ns = 10'000;
  s.host_fixes = {{"launch:0", "launch", "graphs", 5, 10'000, 3'000},
                  {"sync:0", "sync", "syncs", 0, 10'000, 0},  // nothing to gain: left out
                  {"cpu:2x", "cpu", "host", 9, 10'000, 4'000}};
  // kernel_ns ranks mm first; gpu_gain ranks attention first.
  s.bounds = {{"aten::mm", 6'000, 100, 1'000, 0}, {"aten::attn", 2'000, 50, 2'000, 0}, {"aten::add", 0, 900, 0, 800}};
  return s;
}

TEST(CriticalPathAdvice, HostBoundPutsHostFixesFirstByGain) {
  const auto r = rank_recommendations(summary("CPU-bound", 80));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].target, "cpu:2x");
  EXPECT_EQ(r[1].target, "launch:0");
  EXPECT_DOUBLE_EQ(r[1].gain_pct, 30.0);
  EXPECT_EQ(r[2].target, "aten::attn");
  EXPECT_EQ(r[2].kernel_rank, 2);  // beside its gain: its place by kernel time
  EXPECT_EQ(r[3].target, "aten::mm");
  EXPECT_EQ(r[3].kernel_rank, 1);
}

TEST(CriticalPathAdvice, GpuBoundPutsKernelWorkFirstByGain) {
  const auto r = rank_recommendations(summary("GPU-bound", 95));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].kind, "kernel");
  EXPECT_EQ(r[0].target, "aten::attn");
  EXPECT_EQ(r[2].kind, "cpu");
}

TEST(CriticalPathAdvice, AnIdleGpuIsHostBoundWhateverThePathSays) {
  EXPECT_TRUE(summary("GPU-bound", 30).host_bound());
  EXPECT_TRUE(summary("launch-bound", 90).host_bound());
  EXPECT_TRUE(summary("sync-bound", 90).host_bound());
  EXPECT_FALSE(summary("collective-bound", 90).host_bound());
  EXPECT_EQ(rank_recommendations(summary("GPU-bound", 30))[0].kind, "cpu");
}

std::optional<CriticalPathSummary> summarize(const char* name) {
  const auto path = std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data/public_traces" / name;
  const trace::Trace t = trace::load_trace(path, {});
  return summarize_critical_path(t, trace::links_of(t), 5);
}

TEST(CriticalPathAdvice, RealHostBoundTraceLeadsWithAHostFix) {
  const auto s = summarize("tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->host_bound());
  EXPECT_LT(s->gpu_busy_pct, 50);
  ASSERT_EQ(s->host_fixes.size(), 3u);
  const auto r = rank_recommendations(*s);
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].kind, "kernel");
  EXPECT_GT(r[0].gain_ns, 0);
  ASSERT_TRUE(s->median_step);
  int64_t sum = 0;
  for (int64_t c : s->whole.by_category) sum += c;
  EXPECT_EQ(sum, s->whole.length_ns);

  // suggest_optimizations on a gap report carrying it: the same fix first, priority 1.
  nlohmann::json gap = {{"top_kernels", nlohmann::json::array()},
                        {"total_duration_us", 1.0},
                        {"ranks", {{{"rank", 0}, {"critical_path", to_json(*s)}}}}};
  const advice::Advice a = advice::suggest_optimizations(gap);
  ASSERT_FALSE(a.suggestions.empty());
  EXPECT_EQ(a.suggestions[0].kind, r[0].kind);
  EXPECT_EQ(a.suggestions[0].priority, 1);
  ASSERT_TRUE(a.suggestions[0].predicted_gain_us);
  EXPECT_GT(*a.suggestions[0].predicted_gain_us, 0);
}

TEST(CriticalPathAdvice, RealGpuBoundTraceLeadsWithTheTopKernel) {
  const auto s = summarize("tracelens__torch_compile_triton__trace.json.gz");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->host_bound());
  const auto r = rank_recommendations(*s);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].kind, "kernel");
  EXPECT_EQ(r[0].target, "aten::mm");
  EXPECT_EQ(r[0].kernel_rank, 1);
}

TEST(CriticalPathAdvice, CpuOnlyTraceHasNoSummary) {
  EXPECT_FALSE(summarize("hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"));
}

}  // namespace
}  // namespace magpie::analysis
