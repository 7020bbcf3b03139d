// The stability table over repeated profiler captures, on real Kineto traces
// standing in for captures (tests/data/h200_graphs: the same MLP compiled two
// ways, and a CUDA-graph replay), each run through the real gap analysis.
#include "analysis/capture_stability.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "analysis/gap_analysis_report.hpp"
#include "analysis/gap_analysis_run.hpp"

namespace fs = std::filesystem;
using namespace magpie::analysis;

namespace {

const fs::path kData = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/h200_graphs";

// One capture folder holding one trace, analysed as the benchmark does it.
CaptureKernels capture(const fs::path& root, const std::string& label, const std::string& trace) {
  fs::create_directories(root / label);
  fs::copy_file(kData / trace, root / label / trace, fs::copy_options::overwrite_existing);
  CaptureKernels c;
  c.label = label;
  c.result = run_gap_analysis(root / label, {});
  return c;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("magpie_capture_stability_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// percent of kernel time per kernel, as the kernel report prints it
std::map<std::string, double> report_shares(const GapAnalysisResult& r) {
  std::map<std::string, double> out;
  for (const auto& row : make_rows(r.merged, r.total_duration_us, r.merged.size())) out[row.name] = row.pct_total;
  return out;
}

}  // namespace

TEST(CaptureStability, SharesPerCaptureMatchEachCapturesKernelReport) {
  TempDir tmp;
  std::vector<CaptureKernels> caps = {capture(tmp.path, "capture_1", "compile_default.json.gz"),
                                      capture(tmp.path, "capture_2", "compile_reduce_overhead.json.gz"),
                                      capture(tmp.path, "capture_3", "compile_default.json.gz")};
  auto s = capture_stability(caps, 5);
  ASSERT_EQ(s.analysed, (std::vector<std::string>{"capture_1", "capture_2", "capture_3"}));
  EXPECT_TRUE(s.missing.empty());
  ASSERT_FALSE(s.rows.empty());
  EXPECT_LE(s.rows.size(), 5u);
  std::vector<std::map<std::string, double>> expect;
  for (const auto& c : caps) expect.push_back(report_shares(*c.result));
  double widest = 0;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const auto& r = s.rows[i];
    ASSERT_EQ(r.share_pct.size(), 3u) << r.name;
    for (size_t k = 0; k < 3; ++k) {
      auto it = expect[k].find(r.name);
      EXPECT_NEAR(r.share_pct[k], it == expect[k].end() ? 0.0 : it->second, 1e-9) << r.name << " in capture " << k + 1;
    }
    // The same trace twice: the same share.
    EXPECT_DOUBLE_EQ(r.share_pct[0], r.share_pct[2]) << r.name;
    EXPECT_DOUBLE_EQ(r.min_pct, *std::min_element(r.share_pct.begin(), r.share_pct.end()));
    EXPECT_DOUBLE_EQ(r.max_pct, *std::max_element(r.share_pct.begin(), r.share_pct.end()));
    EXPECT_NEAR(r.mean_pct, (r.share_pct[0] + r.share_pct[1] + r.share_pct[2]) / 3, 1e-9);
    if (i > 0) {
      EXPECT_GE(s.rows[i - 1].mean_pct, r.mean_pct);
    }
    widest = std::max(widest, r.max_pct - r.min_pct);
  }
  EXPECT_DOUBLE_EQ(s.max_spread_pct, widest);
  // The two compile modes do not split kernel time the same way: the table shows it.
  EXPECT_GT(s.max_spread_pct, 0.5);
  EXPECT_TRUE(std::any_of(s.rows.begin(), s.rows.end(), [](const StabilityRow& r) { return r.cv > 0; }));
}

TEST(CaptureStability, IdenticalCapturesHaveNoSpread) {
  TempDir tmp;
  auto s = capture_stability({capture(tmp.path, "capture_1", "graph_replay.json.gz"),
                              capture(tmp.path, "capture_2", "graph_replay.json.gz")},
                             10);
  ASSERT_FALSE(s.rows.empty());
  for (const auto& r : s.rows) {
    EXPECT_DOUBLE_EQ(r.cv, 0.0) << r.name;
    EXPECT_GT(r.mean_pct, 0.0) << r.name;
  }
  EXPECT_DOUBLE_EQ(s.max_spread_pct, 0.0);
}

TEST(CaptureStability, AMissingCaptureIsNamedAndTheOthersKept) {
  TempDir tmp;
  CaptureKernels lost;
  lost.label = "capture_2";
  lost.missing_reason = "no trace files within flush_timeout_seconds (5 s)";
  auto s = capture_stability({capture(tmp.path, "capture_1", "compile_default.json.gz"), lost,
                              capture(tmp.path, "capture_3", "compile_reduce_overhead.json.gz")},
                             10);
  EXPECT_EQ(s.analysed, (std::vector<std::string>{"capture_1", "capture_3"}));
  ASSERT_EQ(s.missing.size(), 1u);
  EXPECT_EQ(s.missing[0].first, "capture_2");
  ASSERT_FALSE(s.rows.empty());
  for (const auto& r : s.rows) EXPECT_EQ(r.share_pct.size(), 2u) << r.name;
  auto text = format_capture_stability(s);
  EXPECT_NE(text.find("missing: capture_2 (no trace files within flush_timeout_seconds (5 s))"), std::string::npos)
      << text;
  EXPECT_NE(text.find(s.rows.front().name.substr(0, 40)), std::string::npos) << text;
}

TEST(CaptureStability, NoAnalysedCaptureGivesAnEmptyTableThatSaysSo) {
  CaptureKernels lost;
  lost.label = "capture_1";
  lost.missing_reason = "the measured requests ended before it started";
  auto s = capture_stability({lost}, 10);
  EXPECT_TRUE(s.rows.empty());
  EXPECT_NE(format_capture_stability(s).find("no capture was analysed"), std::string::npos);
}
