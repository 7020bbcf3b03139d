// The pipeline's states on fake commands (no GPU, no compiler needed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kernel/evaluator.hpp"

namespace magpie::kernel {
namespace {

namespace fs = std::filesystem;

struct KernelEvaluatorTest : ::testing::Test {
  fs::path ws = fs::temp_directory_path() / ("magpie_eval_" + std::to_string(::getpid()));
  void SetUp() override {
    fs::remove_all(ws);
    fs::create_directories(ws);
  }
  Evaluation make(const std::string& id, CommandList compile, CommandList testcase) {
    Evaluation e;
    e.spec.id = id;
    e.spec.type = KernelType::kCuda;
    e.spec.working_dir = ws;
    e.spec.compile_command = std::move(compile);
    e.spec.testcase_command = std::move(testcase);
    return e;
  }
  EvaluatorOptions options() {
    EvaluatorOptions o;
    o.workspace = ws;
    o.correctness.timeout_seconds = 1;
    o.performance.timeout_seconds = 5;
    return o;
  }
};

TEST_F(KernelEvaluatorTest, CompileErrorSkipsLaterStages) {
  Evaluator ev(options());
  auto e = make("broken", {{"sh", "-c", "echo 'k.cu(3): error: expected a ;' >&2; exit 1"}}, {{"true"}});
  ev.prepare(e);
  ev.measure_round(e, 0);
  ev.finish(e);
  EXPECT_EQ(e.compiling.state, StageState::kFailed);
  EXPECT_EQ(e.correctness.state, StageState::kSkipped);
  EXPECT_EQ(e.performance.state, StageState::kSkipped);
  EXPECT_EQ(e.score(), 0.0);
  ASSERT_FALSE(e.errors.empty());
  EXPECT_NE(e.errors[0].find("expected a ;"), std::string::npos);  // the log tail travels with the error
}

TEST_F(KernelEvaluatorTest, TestcaseTimeoutFailsCorrectness) {
  Evaluator ev(options());
  auto e = make("slow", {}, {{"sleep", "10"}});
  ev.prepare(e);
  ev.finish(e);
  EXPECT_EQ(e.compiling.state, StageState::kSuccess);
  EXPECT_EQ(e.correctness.state, StageState::kFailed);
  EXPECT_NE(e.correctness.errors.at(0).find("timed out"), std::string::npos);
  EXPECT_LT(e.correctness.wall_seconds, 5);
}

TEST_F(KernelEvaluatorTest, LatencyJsonBecomesTheSamples) {
  auto opt = options();
  Evaluator ev(opt);
  auto e = make("ok", {{"sh", "-c", "echo built > $MAGPIE_KERNEL_DIR/bin"}},
                {{"sh", "-c", "cat $MAGPIE_KERNEL_DIR/bin; echo 'MAGPIE_LATENCY_JSON: {\"mode\":\"events\","
                              "\"stats\":{\"median_ms\":0.2,\"samples_ms\":[0.1,0.2,0.3]}}'"}});
  ev.prepare(e);
  for (int r = 0; r < 3; ++r) ev.measure_round(e, r);
  ev.finish(e);
  EXPECT_EQ(e.correctness.state, StageState::kSuccess);
  EXPECT_EQ(e.correctness_scope, "testcase exit status");
  EXPECT_EQ(e.performance.state, StageState::kSuccess);
  EXPECT_EQ(e.latency.state, StageState::kSuccess);
  EXPECT_EQ(e.samples_ns().size(), 9u);
  EXPECT_EQ(e.timing_source(), "latency_json:events");
  EXPECT_EQ(e.score(), 1.0);
}

TEST_F(KernelEvaluatorTest, RooflineFloorRejectsImpossibleTimes) {
  auto opt = options();
  opt.gpu.peak_tbps = 4.8;
  Evaluator ev(opt);
  auto e = make("too_fast", {}, {{"sh", "-c", "echo 'MAGPIE_LATENCY_JSON: {\"stats\":{\"median_ms\":0.001}}'"}});
  e.spec.min_bytes = 8e8;  // 800 MB cannot move in 1 us at 4.8 TB/s
  ev.prepare(e);
  ev.measure_round(e, 0);
  ev.finish(e);
  EXPECT_EQ(e.performance.state, StageState::kFailed);
  EXPECT_NE(e.performance.errors.at(0).find("roofline floor"), std::string::npos);
  EXPECT_NEAR(e.floor_ns, 8e8 / 4.8e3, 1);
}

TEST_F(KernelEvaluatorTest, NoPerfAndNothingToCheck) {
  auto opt = options();
  opt.check_performance = false;
  Evaluator ev(opt);
  auto e = make("noperf", {}, {{"true"}});
  ev.prepare(e);
  ev.measure_round(e, 0);
  ev.finish(e);
  EXPECT_EQ(e.performance.state, StageState::kSkipped);
  EXPECT_EQ(e.score(), 1.0);
  auto none = make("nothing", {}, {});
  ev.prepare(none);
  ev.finish(none);
  EXPECT_EQ(none.correctness.state, StageState::kSkipped);
  EXPECT_NE(none.correctness.errors.at(0).find("nothing to check"), std::string::npos);
}

TEST_F(KernelEvaluatorTest, HipWithoutHipccSaysSo) {
  if (!find_on_path("hipcc").empty()) GTEST_SKIP() << "hipcc is installed here";
  Evaluator ev(options());
  auto e = make("hip", {}, {{"true"}});
  e.spec.type = KernelType::kHip;
  e.spec.source_files = {ws / "k.hip"};
  ev.prepare(e);
  EXPECT_EQ(e.compiling.state, StageState::kFailed);
  EXPECT_NE(e.compiling.errors.at(0).find("hipcc not found"), std::string::npos);
}

TEST(GpuInfo, ComputeCapToArch) {
  EXPECT_EQ(sm_arch_from_compute_cap("9.0"), "sm_90");
  EXPECT_EQ(sm_arch_from_compute_cap("10.0"), "sm_100");
  EXPECT_FALSE(sm_arch_from_compute_cap("[N/A]"));
  GpuInfo h200{"NVIDIA", "NVIDIA H200", "sm_90"};
  fill_peaks(h200);
  EXPECT_DOUBLE_EQ(h200.peak_tbps, 4.8);
}

}  // namespace
}  // namespace magpie::kernel
