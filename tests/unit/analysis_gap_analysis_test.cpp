#include "analysis/gap_analysis.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/gap_analysis_report.hpp"
#include "analysis/gap_analysis_run.hpp"
#include "core/error.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {
namespace {

namespace fs = std::filesystem;

const fs::path kPublic = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/public_traces";

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

// CPU ops nest (aten::linear > aten::addmm > ...): counted by self time, the
// ops of one thread add up to the union of their spans, never to more. The
// expectation is computed here from the raw rows, per thread.
TEST(GapCpuSelfTime, NestedCpuOpsCountOnceOnARealTrace) {
  const trace::Trace t = trace::load_trace(kPublic / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz", {});
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> spans;
  double sum_of_durations_us = 0;
  for (size_t r = 0; r < t.events.size(); ++r) {
    if (t.events.category[r] != trace::Category::kCpuOp) continue;
    spans[{t.events.pid[r], t.events.tid[r]}].emplace_back(t.events.ts_ns[r], t.events.end_ns(r));
    sum_of_durations_us += static_cast<double>(t.events.dur_ns[r]) * 1e-3;
  }
  double union_us = 0;
  for (auto& [thread, v] : spans) {
    std::sort(v.begin(), v.end());
    int64_t begin = v.front().first, end = v.front().second;
    for (const auto& [b, e] : v) {
      if (b > end) {
        union_us += static_cast<double>(end - begin) * 1e-3;
        begin = b;
      }
      end = std::max(end, e);
    }
    union_us += static_cast<double>(end - begin) * 1e-3;
  }
  GapAnalysisConfig config;
  config.categories = {"cpu_op"};
  const RankGapResult rank = analyze_rank(t, config);
  ASSERT_GT(sum_of_durations_us, 1.5 * union_us) << "the trace should nest its ops";
  EXPECT_NEAR(rank.total_duration_us, union_us, 1e-6 * union_us);
  EXPECT_EQ(rank.device_events, 0u);
  EXPECT_GT(rank.host_events, 0u);
  GapAnalysisResult result;
  result.ranks.push_back(rank);
  EXPECT_EQ(time_basis(result), TimeBasis::kHostSelf);
  EXPECT_EQ(total_time_column(time_basis(result)), "Self CPU total (us)");
  // Kernels do not nest: the default categories count their whole durations under Magpie's name.
  result.ranks = {analyze_rank(t, GapAnalysisConfig{})};
  EXPECT_EQ(total_time_column(time_basis(result)), "Self CUDA total (us)");
}

NoDeviceEvents why_none(const fs::path& file, GapAnalysisConfig config = {}) {
  const trace::Trace t = trace::load_trace(file, {});
  const RankGapResult rank = analyze_rank(t, config);
  EXPECT_TRUE(rank.kernels.empty()) << file;
  return explain_no_device_events(rank, config);
}

// Public traces without CUDA kernels, each for its own reason.
TEST(GapNoDeviceEvents, EachPublicTraceGetsItsOwnCauseAndFix) {
  const auto range = why_none(kPublic / "hta__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz");
  EXPECT_EQ(range.cause, NoDeviceEvents::kRangeProfiler) << range.what;
  EXPECT_NE(range.what.find("cudaLaunchKernel"), std::string::npos) << range.what;
  EXPECT_NE(range.fix.find("profiler_metrics"), std::string::npos) << range.fix;

  const auto mtia = why_none(kPublic / "hta__mtia_inference_trace__mtia_inference_rank_0.json.gz");
  EXPECT_EQ(mtia.cause, NoDeviceEvents::kOtherDevice) << mtia.what;
  EXPECT_EQ(mtia.fix, "rank them with --categories mtia_ccp_events");

  const auto cpu = why_none(kPublic / "hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
  EXPECT_EQ(cpu.cause, NoDeviceEvents::kCpuOnly) << cpu.what;

  GapAnalysisConfig strict;
  strict.min_duration_us = 1e12;
  const auto window = why_none(kPublic / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz", strict);
  EXPECT_EQ(window.cause, NoDeviceEvents::kWindow) << window.what;
  EXPECT_EQ(window.fix.find("ProfilerActivity"), std::string::npos) << window.fix;
}

// A Chrome browser trace (written here in its own shape: comma-joined
// categories such as "gpu,toplevel") is not called another accelerator.
TEST(GapNoDeviceEvents, ABrowsersGpuCategoryIsNotAnotherAccelerator) {
  const fs::path file = fs::temp_directory_path() / fmt::format("magpie_chrome_{}.json", ::getpid());
  {
    std::ofstream f(file);
    f << R"({"traceEvents":[
      {"ph":"X","cat":"gpu,toplevel","name":"GpuChannel::ExecuteDeferredRequest","pid":7,"tid":9,"ts":100,"dur":40},
      {"ph":"X","cat":"gpu","name":"CommandBufferStub::OnAsyncFlush","pid":7,"tid":9,"ts":150,"dur":20},
      {"ph":"X","cat":"toplevel","name":"ThreadControllerImpl::RunTask","pid":7,"tid":3,"ts":90,"dur":100}]})";
  }
  const auto why = why_none(file);
  fs::remove(file);
  EXPECT_EQ(why.cause, NoDeviceEvents::kOtherDevice) << why.what;
  EXPECT_EQ(why.what.find("another accelerator"), std::string::npos) << why.what;
  EXPECT_NE(why.what.find("gpu,toplevel"), std::string::npos) << why.what;
  EXPECT_NE(why.fix.find("ProfilerActivity.CUDA"), std::string::npos) << why.fix;
}

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("magpie_gap_{}_{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A folder of CPU-only traces is ranked over its cpu_op events, as a serving
// run of a CPU server ranks its own: the same answer from both paths.
TEST(GapCpuFallback, CpuOnlyFolderIsRankedByCpuOps) {
  const fs::path dir = fresh_dir("cpu_only");
  fs::copy_file(kPublic / "hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                dir / "rank-34.pt.trace.json.gz");
  GapAnalysisRunOptions options;
  options.cpu_fallback = true;
  const GapAnalysisResult r = run_gap_analysis(dir, options);
  EXPECT_EQ(r.config.categories, std::vector<std::string>{"cpu_op"});
  EXPECT_FALSE(r.cpu_fallback_note.empty());
  EXPECT_EQ(time_basis(r), TimeBasis::kHostSelf);
  EXPECT_FALSE(r.merged.empty());
  fs::remove_all(dir);
}

TEST(GapCpuFallback, AnotherAcceleratorIsRefusedWithTheCategoryToPass) {
  const fs::path dir = fresh_dir("mtia");
  fs::copy_file(kPublic / "hta__mtia_inference_trace__mtia_inference_rank_0.json.gz", dir / "mtia.json.gz");
  try {
    GapAnalysisRunOptions options;
    options.cpu_fallback = true;
    run_gap_analysis(dir, options);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoGpuEvents);
    EXPECT_NE(std::string(e.what()).find("mtia_ccp_events"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("ProfilerActivity.CUDA"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Two runs into one output folder: each keeps its own folder; gap_analysis
// links to the newest, replaced in one rename.
TEST(GapRunFolders, EachRunKeepsItsFolderAndTheLinkFollowsTheNewest) {
  const fs::path out = fresh_dir("runs");
  const fs::path a = make_gap_run_dir(out), b = make_gap_run_dir(out);
  ASSERT_NE(a, b);
  EXPECT_EQ(a.parent_path(), out);
  EXPECT_TRUE(a.filename().string().starts_with("gap_analysis_")) << a;
  std::ofstream(a / "gap_analysis.csv") << "first\n";
  std::ofstream(b / "gap_analysis.csv") << "second\n";
  EXPECT_FALSE(link_latest_gap_run(out, a));
  EXPECT_EQ(fs::read_symlink(out / "gap_analysis"), a.filename());
  EXPECT_EQ(slurp(out / "gap_analysis" / "gap_analysis.csv"), "first\n");
  EXPECT_FALSE(link_latest_gap_run(out, b));
  EXPECT_EQ(slurp(out / "gap_analysis" / "gap_analysis.csv"), "second\n");
  EXPECT_EQ(slurp(a / "gap_analysis.csv"), "first\n");
  for (const auto& e : fs::directory_iterator(out))  // no temporary link left behind
    EXPECT_FALSE(e.path().filename().string().ends_with(".tmp")) << e.path();
  fs::remove_all(out);
}

// An older Magpie wrote every run into a real gap_analysis/ folder: that run
// is moved to a run folder of its own, not overwritten.
TEST(GapRunFolders, AnOlderFixedFolderIsMovedAside) {
  const fs::path out = fresh_dir("legacy");
  fs::create_directories(out / "gap_analysis");
  std::ofstream(out / "gap_analysis" / "gap_analysis.json") << "{\"old\": true}\n";
  const fs::path run = make_gap_run_dir(out);
  const auto moved = link_latest_gap_run(out, run);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->from, fs::weakly_canonical(out) / "gap_analysis");
  EXPECT_TRUE(moved->to.filename().string().starts_with("gap_analysis_")) << moved->to;
  EXPECT_NE(moved->to, run);
  EXPECT_EQ(slurp(moved->to / "gap_analysis.json"), "{\"old\": true}\n");
  EXPECT_TRUE(fs::is_symlink(out / "gap_analysis"));
  EXPECT_EQ(fs::read_symlink(out / "gap_analysis"), run.filename());
  fs::remove_all(out);
}

}  // namespace
}  // namespace magpie::analysis
