// The kernel jobs layer: paths resolved once against the caller's folder, and a
// run that could not time anything exits with its own code and is not recorded
// as succeeded. Real commands, a real results store, no GPU needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/file_io.hpp"
#include "jobs/kernel_jobs.hpp"
#include "kernel/gpu_info.hpp"
#include "store/results_store.hpp"

namespace magpie::jobs {
namespace {

namespace fs = std::filesystem;

TEST(KernelJobs, RelativePathsResolveAgainstTheCallersFolder) {
  KernelEvaluationRequest r;
  r.output_dir = "./results";
  r.sources.kernel_config = "some/folder/compare.yaml";
  r.sources.files = {"k.cu", "/abs/j.cu"};
  r.sources.working_dir = "../w";
  auto a = with_absolute_paths(r, "/home/u/proj");
  EXPECT_EQ(a.output_dir, fs::path("/home/u/proj/results"));
  EXPECT_EQ(a.sources.kernel_config, "/home/u/proj/some/folder/compare.yaml");
  EXPECT_EQ(a.sources.files, (std::vector<std::string>{"/home/u/proj/k.cu", "/abs/j.cu"}));
  EXPECT_EQ(a.sources.working_dir, "/home/u/w");
  r.output_dir = "/tmp/out";
  r.sources.working_dir.clear();
  a = with_absolute_paths(r, "/home/u/proj");
  EXPECT_EQ(a.output_dir, fs::path("/tmp/out"));
  EXPECT_EQ(a.sources.working_dir, "");  // "" keeps meaning "each file's folder"
}

TEST(KernelJobs, ExitCodeSaysPerformanceWasNotMeasured) {
  KernelEvaluationOutcome o;
  o.all_correct = true;
  EXPECT_EQ(o.exit_code(), 0);
  o.performance_not_measured = "no GPU found (x): timing needs one";
  EXPECT_EQ(o.exit_code(), kExitPerformanceNotMeasured);
  EXPECT_NE(kExitPerformanceNotMeasured, 0);
  EXPECT_NE(kExitPerformanceNotMeasured, 1);
  o.all_correct = false;  // an incorrect implementation is the worse news
  EXPECT_EQ(o.exit_code(), 1);
}

TEST(KernelJobs, TimingNeedsAGpuForTheHarnessAndCompiledCode) {
  kernel::KernelSpec harness;
  harness.id = "h";
  harness.type = kernel::KernelType::kPytorch;
  harness.bench_target.module = "m";
  harness.bench_target.callable = "f";
  kernel::KernelSpec testcase;  // a Python entry timed by its own command: may run on the CPU
  testcase.type = kernel::KernelType::kTriton;
  testcase.testcase_command = {{"true"}};
  kernel::KernelSpec cuda;
  cuda.type = kernel::KernelType::kCuda;
  cuda.testcase_command = {{"./k"}};
  kernel::KernelSpec profiled = cuda;  // the user's profiler decides
  profiled.prof_command = {{"./prof"}};
  kernel::GpuInfo none;
  EXPECT_EQ(why_timing_cannot_run(none, "NVML not found", {testcase, harness}),
            "no GPU found (NVML not found): timing with the Python harness needs one");
  EXPECT_EQ(why_timing_cannot_run(none, "", {cuda}), "no GPU found (the driver reports none): timing CUDA code needs one");
  EXPECT_EQ(why_timing_cannot_run(none, "x", {testcase, profiled}), "");
  kernel::GpuInfo h200;
  h200.vendor = "NVIDIA";
  h200.name = "NVIDIA H200";
  EXPECT_EQ(why_timing_cannot_run(h200, "", {harness, cuda}), "");
}

// The whole job from another working folder with a relative -o: the testcase
// writes into $MAGPIE_KERNEL_DIR from the kernel's folder, as the harness does.
// Without a GPU the run is correctness only, exits 8 and is stored as failed.
TEST(KernelJobs, RelativeOutputFromAnotherFolderAndNoGpuRun) {
  if (!kernel::detect_gpu().vendor.empty()) GTEST_SKIP() << "this machine has a GPU: timing runs";
  const fs::path root = fs::temp_directory_path() / ("magpie_kjobs_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "kernels");
  fs::create_directories(root / "caller");
  write_file_atomic(root / "kernels" / "kernel.yaml",
                    "kernel:\n  id: k\n  type: cuda\n"
                    "  testcase_command: [sh, -c, 'echo ok > $MAGPIE_KERNEL_DIR/written']\n");
  const fs::path cwd = fs::current_path();
  fs::current_path(root / "caller");
  KernelEvaluationRequest r;
  r.sources.kernel_config = "../kernels/kernel.yaml";
  r.output_dir = "out";
  JobContext context;
  context.store_path = root / "results.db";
  KernelEvaluationOutcome o;
  try {
    o = evaluate_kernels(r, context);
  } catch (...) {
    fs::current_path(cwd);
    throw;
  }
  fs::current_path(cwd);
  EXPECT_EQ(o.workspace.parent_path(), root / "caller" / "out");
  EXPECT_TRUE(fs::exists(o.workspace / "k" / "written"));
  EXPECT_TRUE(o.all_correct);
  EXPECT_NE(o.performance_not_measured.find("no GPU found"), std::string::npos);
  EXPECT_EQ(o.exit_code(), kExitPerformanceNotMeasured);
  EXPECT_EQ(o.evaluations.at(0).rounds.size(), 0u);
  auto report = report_json(o);
  EXPECT_EQ(report["performance_not_measured"], o.performance_not_measured);
  auto store = store::ResultsStore::open(root / "results.db");
  auto rec = store.get(o.run_id);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->status, store::RunStatus::kFailed);
  EXPECT_NE(rec->error.find("performance not measured"), std::string::npos) << rec->error;
  fs::remove_all(root);
}

}  // namespace
}  // namespace magpie::jobs
