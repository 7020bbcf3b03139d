// Runs the Python harness's own tests (python/magpie_bench/tests) with pytest:
// the pure parts always, the torch parts only where torch is installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kernel/gpu_info.hpp"
#include "kernel/process_runner.hpp"

namespace magpie::kernel {
namespace {

namespace fs = std::filesystem;

TEST(PythonHarness, PytestSuite) {
  fs::path py = fs::path(MAGPIE_SOURCE_DIR) / "python";
  auto probe = run_process({{"python3", "-c", "import pytest"}, py, {}, std::chrono::seconds(30), {}});
  if (!probe.ok()) GTEST_SKIP() << "pytest is not installed for python3";
  fs::path log = fs::temp_directory_path() / ("magpie_pytest_" + std::to_string(::getpid()) + ".log");
  fs::remove(log);
  auto r = run_process({{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "magpie_bench/tests"},
                        py,
                        {{"PYTHONPATH", py.string()}, {"PYTHONDONTWRITEBYTECODE", "1"}},
                        std::chrono::seconds(120),
                        log});
  EXPECT_TRUE(r.ok()) << r.describe() << "\n" << log_tail(log, 6000);
}

TEST(CuptiLibrary, RecordsKernelsOnAGpu) {
  if (find_on_path("nvidia-smi").empty()) {
    GTEST_SKIP() << "no CUDA GPU: libmagpie_cupti.so is validated on the H200 (docs/GPU_VALIDATION.md)";
  }
  auto r = run_process({{"nvidia-smi", "-L"}, {}, {}, std::chrono::seconds(20), {}});
  if (!r.ok()) GTEST_SKIP() << "no CUDA GPU: nvidia-smi -L failed";
  SUCCEED() << "GPU present: run docs/GPU_VALIDATION.md's script for the end-to-end check";
}

}  // namespace
}  // namespace magpie::kernel
