// The pipeline's states on fake commands (no GPU, no compiler needed).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/file_io.hpp"
#include "kernel/evaluator.hpp"
#include "kernel/markdown_table.hpp"
#include "kernel/performance_rounds.hpp"
#include "kernel/ranking.hpp"
#include "kernel/report_json.hpp"

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
  // For real interpreters and compilers on a busy machine.
  EvaluatorOptions roomy_options() {
    auto o = options();
    o.correctness.timeout_seconds = 60;
    o.performance.timeout_seconds = 60;
    return o;
  }
  Evaluation indexed(size_t index, const std::string& id, CommandList compile, CommandList testcase) {
    Evaluation e = make(id, std::move(compile), std::move(testcase));
    e.index = index;
    return e;
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

// Stands in for a CUDA program under libmagpie_cupti.so (no GPU in CI): writes
// two kernel records to $MAGPIE_CUPTI_OUTPUT in the library's JSONL format, as
// tests/data/kernel/cupti_sample.jsonl and python/magpie_bench/tests do, and
// prints MAGPIE_LATENCY_JSON like the harness (9 ms samples under concurrent,
// so a probe's samples are recognisable). "side" runs 2000-4000 ns inside "k"
// (1000-5000 ns) on `side_stream`: 7 is k's own stream, anything else overlaps.
// k has 262,144 blocks, so when nothing overlaps auto's cost model picks serial.
Command fake_cupti_program(int side_stream) {
  std::string script = fmt::format(
      R"(echo "kind=${{MAGPIE_CUPTI_KIND:-none}}"
if [ -n "$MAGPIE_CUPTI_OUTPUT" ]; then
  echo '{{"name":"k_'"$MAGPIE_CUPTI_KIND"'","start":1000,"end":5000,"stream":7,"grid":[262144,1,1]}}' > "$MAGPIE_CUPTI_OUTPUT"
  echo '{{"name":"side","start":2000,"end":4000,"stream":{}}}' >> "$MAGPIE_CUPTI_OUTPUT"
fi
ms=0.2; [ "$MAGPIE_CUPTI_KIND" = concurrent ] && ms=9
echo "MAGPIE_LATENCY_JSON: {{\"mode\":\"events\",\"stats\":{{\"samples_ms\":[$ms,$ms,$ms]}}}}")",
      side_stream);
  return {"sh", "-c", script};
}

std::string text_of(const fs::path& p) { return std::string(read_file(p).view()); }

struct CuptiRounds : KernelEvaluatorTest {
  EvaluatorOptions cupti_options() {
    auto o = options();
    o.cupti_lib = ws / "libmagpie_cupti.so";  // never loaded: the testcase is a shell script
    o.performance.rounds = 3;
    return o;
  }
  std::vector<Evaluation> run(const Evaluator& ev, std::vector<Evaluation> evals, CuptiChoice& choice) {
    for (auto& e : evals) ev.prepare(e);
    choice = run_performance_rounds(ev, evals);
    for (auto& e : evals) ev.finish(e);
    return evals;
  }
};

TEST_F(CuptiRounds, AutoProbeChoosesSerialWhenNoStreamsOverlap) {
  Evaluator ev(cupti_options());
  CuptiChoice choice;
  auto evals = run(ev, {make("a", {}, {fake_cupti_program(7)}), make("b", {}, {fake_cupti_program(7)})}, choice);
  EXPECT_EQ(choice.kind, "serial");
  EXPECT_EQ(choice.chosen_by, "auto");
  EXPECT_EQ(choice.probe_overlap_ns, 0);
  for (const auto& e : evals) {
    // No separate probe pass: the first round (r0, concurrent) decided serial, so it
    // counts as the probe and three serial rounds (r1-r3) follow.
    ASSERT_EQ(e.rounds.size(), 4u) << e.spec.id;
    const auto& probe = e.rounds[0];
    EXPECT_TRUE(probe.probe);
    EXPECT_EQ(probe.round, -1);
    EXPECT_EQ(probe.cupti_kind, "concurrent");
    EXPECT_EQ(probe.cross_stream_overlap_ns, 0);  // same-stream overlap does not count
    EXPECT_NE(text_of(e.dir / "performance_r0.log").find("kind=concurrent"), std::string::npos);
    EXPECT_FALSE(fs::exists(e.dir / "kernels_probe.jsonl"));
    for (int r = 1; r <= 3; ++r) {
      const auto& m = e.rounds[static_cast<size_t>(r)];
      EXPECT_FALSE(m.probe);
      EXPECT_EQ(m.round, r);
      EXPECT_EQ(m.cupti_kind, "serial");
      EXPECT_NE(text_of(e.dir / fmt::format("performance_r{}.log", r)).find("kind=serial"), std::string::npos);
    }
    // The probe's 9 ms samples and its kernels stay out of what is reported and compared.
    auto samples = e.samples_ns();
    EXPECT_EQ(samples.size(), 9u);
    for (double ns : samples) EXPECT_DOUBLE_EQ(ns, 0.2e6);
    ASSERT_EQ(e.samples_by_round().size(), 3u);
    EXPECT_EQ(e.samples_by_round()[0].size(), 3u);
    EXPECT_EQ(e.kernels.size(), 6u);
    for (const auto& k : e.kernels) EXPECT_NE(k.name, "k_concurrent");
    EXPECT_EQ(e.cupti.kind, "serial");
    EXPECT_EQ(e.performance.state, StageState::kSuccess);
  }
}

TEST_F(CuptiRounds, AutoProbeKeepsConcurrentWhenStreamsOverlap) {
  auto opt = cupti_options();
  opt.latency.kernel_filter = "^k_";  // the overlap still counts "side", which the filter drops
  Evaluator ev(opt);
  CuptiChoice choice;
  auto evals =
      run(ev, {make("one_stream", {}, {fake_cupti_program(7)}), make("two_streams", {}, {fake_cupti_program(13)})},
          choice);
  EXPECT_EQ(choice.kind, "concurrent");
  EXPECT_EQ(choice.probe_overlap_ns, 2000);
  EXPECT_NE(choice.reason.find("two_streams"), std::string::npos) << choice.reason;
  for (const auto& e : evals) {
    // concurrent kept: the deciding first round is a measured round, no extra run.
    ASSERT_EQ(e.rounds.size(), 3u);
    for (const auto& m : e.rounds) {
      EXPECT_FALSE(m.probe);
      EXPECT_EQ(m.cupti_kind, "concurrent");
      EXPECT_EQ(m.cross_stream_overlap_ns, e.spec.id == "two_streams" ? 2000 : 0);
      EXPECT_EQ(m.cupti_kernels, 1u);
    }
    EXPECT_EQ(e.kernels.size(), 3u);  // filtered, measured rounds only
    EXPECT_EQ(e.samples_ns().size(), 9u);
  }
}

TEST_F(CuptiRounds, ExplicitKindRunsNoProbe) {
  auto opt = cupti_options();
  opt.performance.cupti_kind = "serial";
  Evaluator ev(opt);
  CuptiChoice choice;
  auto evals = run(ev, {make("two_streams", {}, {fake_cupti_program(13)})}, choice);
  EXPECT_EQ(choice.kind, "serial");  // overlapping streams, but the config says serial
  EXPECT_EQ(choice.chosen_by, "config");
  EXPECT_FALSE(choice.probe_overlap_ns.has_value());
  const auto& e = evals[0];
  ASSERT_EQ(e.rounds.size(), 3u);
  for (const auto& m : e.rounds) {
    EXPECT_FALSE(m.probe);
    EXPECT_EQ(m.cupti_kind, "serial");
  }
  EXPECT_FALSE(fs::exists(e.dir / "kernels_probe.jsonl"));
  EXPECT_NE(text_of(e.dir / "performance_r0.log").find("kind=serial"), std::string::npos);
}

TEST_F(CuptiRounds, WithoutTheLibraryNothingChanges) {
  auto opt = cupti_options();
  opt.cupti_lib.clear();  // CI, AMD
  Evaluator ev(opt);
  CuptiChoice choice;
  auto evals = run(ev, {make("a", {}, {fake_cupti_program(13)})}, choice);
  EXPECT_TRUE(choice.kind.empty());
  EXPECT_NE(choice.reason.find("no CUPTI library"), std::string::npos) << choice.reason;
  const auto& e = evals[0];
  ASSERT_EQ(e.rounds.size(), 3u);
  for (const auto& m : e.rounds) {
    EXPECT_FALSE(m.probe);
    EXPECT_TRUE(m.cupti_kind.empty());
    EXPECT_TRUE(m.cupti_jsonl.empty());
  }
  EXPECT_NE(text_of(e.dir / "performance_r0.log").find("kind=none"), std::string::npos);
  EXPECT_TRUE(e.cupti.kind.empty());
}

// Timing integrity (a candidate that skips work or serves a cached result):
// windows without GPU work are a rejection with the rule named, never a number.
TEST_F(KernelEvaluatorTest, EmptyTimedWindowsAreRejectedNotRanked) {
  Evaluator ev(options());
  auto cheat = make("cached", {}, {{"sh", "-c",
      "echo 'MAGPIE_LATENCY_JSON: {\"mode\":\"events\",\"stats\":{\"samples_ms\":[0.0,0.0,0.0]}}'"}});
  ev.prepare(cheat);
  ev.measure_round(cheat, 0);
  ev.finish(cheat);
  EXPECT_TRUE(cheat.correct());
  EXPECT_EQ(cheat.performance.state, StageState::kFailed);
  ASSERT_FALSE(cheat.performance.errors.empty());
  EXPECT_NE(cheat.performance.errors[0].find("no GPU work measured in 3 of 3 timed windows"), std::string::npos)
      << cheat.performance.errors[0];
  EXPECT_NE(cheat.performance.errors[0].find("rule: empty timed window"), std::string::npos);
}

// The harness's spot checks (python/magpie_bench/integrity.py) report broken
// rules in the payload; the evaluator rejects with the first rule named.
TEST_F(KernelEvaluatorTest, IntegrityViolationsFromTheHarnessAreRejections) {
  Evaluator ev(options());
  auto cheat = make("address_cache", {}, {{"sh", "-c",
      "echo 'MAGPIE_LATENCY_JSON: {\"mode\":\"events\",\"stats\":{\"samples_ms\":[0.2,0.2,0.2]},"
      "\"integrity\":{\"violations\":[{\"rule\":\"timed output differs from a fresh computation\","
      "\"detail\":\"spot check 1, output 0: 512 of 4096 elements outside\"}],\"warnings\":[]}}'"}});
  auto honest = make("honest", {}, {{"sh", "-c",
      "echo 'MAGPIE_LATENCY_JSON: {\"mode\":\"events\",\"stats\":{\"samples_ms\":[0.2,0.2,0.2]},"
      "\"integrity\":{\"violations\":[],\"warnings\":[\"persistent output buffer\"]}}'"}});
  for (auto* e : {&cheat, &honest}) {
    ev.prepare(*e);
    ev.measure_round(*e, 0);
    ev.finish(*e);
  }
  EXPECT_EQ(honest.performance.state, StageState::kSuccess);
  EXPECT_EQ(cheat.performance.state, StageState::kFailed);
  ASSERT_FALSE(cheat.performance.errors.empty());
  const auto& why = cheat.performance.errors[0];
  EXPECT_NE(why.find("timing integrity, round 0: spot check 1"), std::string::npos) << why;
  EXPECT_NE(why.find("rule: timed output differs from a fresh computation"), std::string::npos) << why;
}

TEST_F(CuptiRounds, NoKernelsUnderCuptiIsRejectedWhileTheHonestOneIsRanked) {
  auto opt = cupti_options();
  opt.performance.cupti_kind = "serial";
  Evaluator ev(opt);
  // The cheat prints plausible wall-clock samples but launches nothing.
  Command no_kernels = {"sh", "-c",
      "echo 'MAGPIE_LATENCY_JSON: {\"mode\":\"events\",\"stats\":{\"samples_ms\":[0.1,0.1,0.1]}}'"};
  CuptiChoice choice;
  auto evals = run(ev, {make("honest", {}, {fake_cupti_program(7)}), make("cheat", {}, {no_kernels})}, choice);
  EXPECT_EQ(evals[0].performance.state, StageState::kSuccess);
  EXPECT_EQ(evals[1].performance.state, StageState::kFailed);
  ASSERT_FALSE(evals[1].performance.errors.empty());
  EXPECT_NE(evals[1].performance.errors[0].find("CUPTI saw no kernel in any of the 3 performance run(s)"),
            std::string::npos)
      << evals[1].performance.errors[0];
}

// Why a step failed, in one line, from the failed command's own output (kernel/failure_cause.hpp).
// A real Python process fails on a missing module: the ranking says so, not the command line.
TEST_F(KernelEvaluatorTest, MissingModuleIsTheReasonNotTheCommand) {
  if (find_on_path("python3").empty()) GTEST_SKIP() << "no python3 on PATH";
  Evaluator ev(roomy_options());
  std::vector<Evaluation> evals{indexed(0, "base", {}, {{"true"}}),
                                indexed(1, "cand", {}, {{"python3", "-c", "import magpie_no_such_module_here"}})};
  for (auto& e : evals) ev.prepare(e);
  EXPECT_EQ(evals[1].correctness.state, StageState::kFailed);
  EXPECT_EQ(evals[1].correctness.cause, "ModuleNotFoundError: No module named 'magpie_no_such_module_here'");
  EXPECT_NE(evals[1].correctness.fix.find(find_on_path("python3")), std::string::npos) << evals[1].correctness.fix;
  for (auto& e : evals) ev.finish(e);
  auto ranking = rank_evaluations(evals, 0, {});
  EXPECT_EQ(ranking.rows[1].reason, "incorrect: ModuleNotFoundError: No module named 'magpie_no_such_module_here'");
  auto md = markdown_table(evals, &ranking);
  EXPECT_NE(md.find("No module named 'magpie_no_such_module_here'"), std::string::npos) << md;
  auto report = compare_report(evals, ranking, {}, {}, "t");
  const auto& cr = report["results"]["kernel_results"][1]["correctness_result"];
  EXPECT_EQ(cr["cause"], "ModuleNotFoundError: No module named 'magpie_no_such_module_here'");
  EXPECT_TRUE(cr.contains("fix"));
  EXPECT_EQ(report["results"]["verdicts"][1]["reason"], ranking.rows[1].reason);
}

// A build that fails at its second command: the cause is from that command's output.
TEST_F(KernelEvaluatorTest, CompileCauseIsFromTheFailedCommand) {
  Evaluator ev(roomy_options());
  auto e = make("k", {{"sh", "-c", "echo 'warning: error: not this one' >&2"},
                         {"sh", "-c", "echo 'k.cu(7): error: expected a \";\"' >&2; exit 2"}},
                {{"true"}});
  ev.prepare(e);
  EXPECT_EQ(e.compiling.state, StageState::kFailed);
  EXPECT_EQ(e.compiling.cause, "k.cu(7): error: expected a \";\"");
  auto md = markdown_table({e}, nullptr);
  EXPECT_NE(md.find("| compile: k.cu(7): error: expected a \";\" |"), std::string::npos) << md;
}

// ${MAGPIE_GPU_ARCH} with no GPU to take it from never reaches the command.
TEST_F(KernelEvaluatorTest, UnsetArchVariableIsNamedAndNotRun) {
  if (std::getenv("MAGPIE_GPU_ARCH") != nullptr) GTEST_SKIP() << "MAGPIE_GPU_ARCH is set here";
  Evaluator ev(roomy_options());
  auto e = make("k", {{"touch", (ws / "ran").string(), "--offload-arch=${MAGPIE_GPU_ARCH}"}}, {{"true"}});
  e.spec.type = KernelType::kHip;
  ev.prepare(e);
  EXPECT_EQ(e.compiling.state, StageState::kFailed);
  EXPECT_FALSE(fs::exists(ws / "ran"));
  EXPECT_NE(e.compiling.cause.find("${MAGPIE_GPU_ARCH} is not set"), std::string::npos) << e.compiling.cause;
  EXPECT_NE(e.compiling.fix.find("MAGPIE_GPU_ARCH=sm_90"), std::string::npos) << e.compiling.fix;
}

// ${MAGPIE_CUDA_ARCH} with no GPU: nvcc's oldest target, noted; without nvcc, named as above.
TEST_F(KernelEvaluatorTest, CudaArchDefaultsToNvccsOldestTarget) {
  if (std::getenv("MAGPIE_GPU_ARCH") != nullptr || std::getenv("MAGPIE_CUDA_ARCH") != nullptr)
    GTEST_SKIP() << "MAGPIE_GPU_ARCH or MAGPIE_CUDA_ARCH is set here";
  Evaluator ev(roomy_options());
  auto e = make("k", {{"sh", "-c", "echo arch=$1", "sh", "-arch=${MAGPIE_CUDA_ARCH}"}}, {{"true"}});
  ev.prepare(e);
  const std::string arch = default_cuda_arch();
  if (find_on_path("nvcc").empty()) {
    EXPECT_EQ(arch, "");
    EXPECT_EQ(e.compiling.state, StageState::kFailed);
    EXPECT_NE(e.compiling.cause.find("${MAGPIE_CUDA_ARCH} is not set"), std::string::npos);
    return;
  }
  ASSERT_EQ(arch.rfind("sm_", 0), 0u) << arch;
  EXPECT_EQ(e.compiling.state, StageState::kSuccess) << (e.errors.empty() ? "" : e.errors[0]);
  EXPECT_NE(log_tail(e.compiling.log).find("arch=-arch=" + arch), std::string::npos) << log_tail(e.compiling.log);
  ASSERT_FALSE(e.compiling.notes.empty());
  EXPECT_NE(e.compiling.notes.back().find("MAGPIE_CUDA_ARCH} = " + arch), std::string::npos);
}

// No GPU to time on: correctness runs, no round runs, performance is "not measured" with the reason.
TEST_F(KernelEvaluatorTest, PerformanceUnavailableRunsNoRound) {
  auto opt = roomy_options();
  opt.performance_unavailable = "no GPU found (NVML not found): timing needs one";
  opt.performance.rounds = 3;
  Evaluator ev(opt);
  std::vector<Evaluation> evals{indexed(0, "base", {}, {{"sh", "-c", "echo run >> " + (ws / "runs").string()}}),
                                indexed(1, "cand", {}, {{"true"}})};
  for (auto& e : evals) ev.prepare(e);
  run_performance_rounds(ev, evals);
  for (auto& e : evals) ev.finish(e);
  EXPECT_EQ(log_tail(ws / "runs"), "run\n");  // the correctness run only
  for (const auto& e : evals) {
    EXPECT_EQ(e.correctness.state, StageState::kSuccess);
    EXPECT_EQ(e.performance.state, StageState::kSkipped);
    EXPECT_TRUE(e.rounds.empty());
    EXPECT_EQ(e.performance.cause, "not measured: no GPU found (NVML not found): timing needs one");
    EXPECT_TRUE(e.errors.empty());
  }
  auto ranking = rank_evaluations(evals, 0, {});
  EXPECT_EQ(ranking.rows[1].reason, "not measured: no GPU found (NVML not found): timing needs one");
  auto md = markdown_table(evals, &ranking);
  EXPECT_NE(md.find("| not measured |"), std::string::npos) << md;
}

TEST(GpuInfo, ComputeCapToArch) {
  EXPECT_EQ(sm_arch_from_compute_cap("9.0"), "sm_90");
  EXPECT_EQ(sm_arch_from_compute_cap("10.0"), "sm_100");
  EXPECT_FALSE(sm_arch_from_compute_cap("[N/A]"));
  GpuInfo h200{"NVIDIA", "NVIDIA H200", "sm_90"};
  fill_peaks(h200);
  EXPECT_DOUBLE_EQ(h200.peak_tbps, 4.8);
}

// Adaptive rounds (issue 28 item 3): a settled candidate stops after min_rounds,
// an AMBIGUOUS one goes on to max_rounds with the baseline; --rounds N is exactly N.
struct AdaptiveRounds : KernelEvaluatorTest {
  // Five samples per run: `ms`, or alternating ms / ms2 from run to run (counted in a file).
  Command program(const std::string& id, const std::string& ms, const std::string& ms2 = "") {
    std::string script = fmt::format(
        "n=$(( $(cat {0}/{1}.n 2>/dev/null || echo 0) + 1 )); echo $n > {0}/{1}.n; v={2}; "
        "[ -n \"{3}\" ] && [ $((n % 2)) = 0 ] && v={3}; "
        "echo \"MAGPIE_LATENCY_JSON: {{\\\"mode\\\":\\\"events\\\",\\\"stats\\\":{{\\\"samples_ms\\\":[$v,$v,$v,$v,$v]}}}}\"",
        ws.string(), id, ms, ms2);
    return {"sh", "-c", script};
  }
  std::vector<Evaluation> run(EvaluatorOptions opt, std::vector<std::string>* settled = nullptr) {
    Evaluator ev(opt);
    std::vector<Evaluation> evals{indexed(0, "base", {}, {program("base", "1.0")}),
                                  indexed(1, "same", {}, {program("same", "1.0")}),
                                  indexed(2, "open", {}, {program("open", "1.0", "1.05")})};
    for (auto& e : evals) ev.prepare(e);
    RoundsPlan plan;
    plan.baseline = 0;
    run_performance_rounds(ev, evals, {}, plan,
                           [settled](const Evaluation& e, const std::optional<SpeedupEstimate>& est, int rounds) {
                             if (settled)
                               settled->push_back(fmt::format("{} {} {}", e.spec.id,
                                                              est ? to_string(est->verdict) : "open", rounds));
                           });
    for (auto& e : evals) ev.finish(e);
    return evals;
  }
};

TEST_F(AdaptiveRounds, SettledCandidatesStopAndOpenOnesRunToTheCap) {
  auto opt = roomy_options();
  opt.performance.min_rounds = 3;
  opt.performance.max_rounds = 6;
  std::vector<std::string> settled;
  auto evals = run(opt, &settled);
  EXPECT_EQ(evals[0].samples_by_round().size(), 6u);  // the baseline runs while any verdict is open
  EXPECT_EQ(evals[1].samples_by_round().size(), 3u);  // SAME after the minimum: not measured again
  EXPECT_EQ(evals[2].samples_by_round().size(), 6u);  // AMBIGUOUS to the cap
  EXPECT_EQ(settled, (std::vector<std::string>{"same SAME 3", "open open 6"}));
}

TEST_F(AdaptiveRounds, ExactRoundsMeanExactlyThatMany) {
  auto opt = roomy_options();
  opt.performance.rounds = 4;
  opt.performance.rounds_exact = true;
  std::vector<std::string> settled;
  auto evals = run(opt, &settled);
  for (const auto& e : evals) EXPECT_EQ(e.samples_by_round().size(), 4u) << e.spec.id;
  EXPECT_TRUE(settled.empty());  // no adaptive verdicts along the way
}

}  // namespace
}  // namespace magpie::kernel
