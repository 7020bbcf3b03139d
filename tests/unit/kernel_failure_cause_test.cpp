// Why a step failed, in one line: the cause extracted from real outputs (Python
// tracebacks, the harness's lines, nvcc and ld errors) and the fix where one is
// known. The pipeline carrying both to the ranking, the table and the report:
// kernel_evaluator_test.cpp.
#include <gtest/gtest.h>

#include "kernel/evaluator.hpp"
#include "kernel/failure_cause.hpp"

namespace magpie::kernel {
namespace {

TEST(KernelFailureCause, LastPythonExceptionLine) {
  // As `python3 -m magpie_bench check` prints it when torch is missing.
  const char* out =
      "$ python3 -m magpie_bench check --target softmax_torch:softmax\n"
      "Traceback (most recent call last):\n"
      "  File \"/x/magpie_bench/__main__.py\", line 51, in main\n"
      "    target = instantiate(load_target(a.target, a.target_dir), init)\n"
      "ModuleNotFoundError: No module named 'torch'\n";
  EXPECT_EQ(cause_from_output(out), "ModuleNotFoundError: No module named 'torch'");
  // Chained: the last traceback's exception is the one that ended the run.
  const char* chained =
      "Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'\n\n"
      "During handling of the above exception, another exception occurred:\n\n"
      "Traceback (most recent call last):\n  File \"a.py\", line 3\n    raise RuntimeError('bad shape')\n"
      "RuntimeError: bad shape\n";
  EXPECT_EQ(cause_from_output(chained), "RuntimeError: bad shape");
  const char* syntax =
      "Traceback (most recent call last):\n  File \"k.py\", line 2\n    def f(:\n          ^\n"
      "SyntaxError: invalid syntax\n";
  EXPECT_EQ(cause_from_output(syntax), "SyntaxError: invalid syntax");
}

TEST(KernelFailureCause, HarnessLines) {
  // python/magpie_bench/timing.py without a GPU.
  EXPECT_EQ(cause_from_output("warming up\nMAGPIE_LATENCY_JSON: {\"error\": \"timing needs a CUDA GPU "
                              "(torch.cuda.is_available() is False)\"}\n"),
            "timing needs a CUDA GPU (torch.cuda.is_available() is False)");
  // The check's own error line, not its summary.
  EXPECT_EQ(cause_from_output("magpie_bench: seed 42, output 0: mismatch\nmagpie_bench: seed 43, output 0: mismatch\n"
                              "magpie_bench: correctness FAILED (numerical vs baseline on 2 seeds, input "
                              "immutability, poisoned outputs)\n"),
            "seed 42, output 0: mismatch");
}

TEST(KernelFailureCause, CompilerAndLinkerErrors) {
  EXPECT_EQ(cause_from_output("nvcc fatal   : Unsupported gpu architecture 'compute_xx'\n"),
            "nvcc fatal   : Unsupported gpu architecture 'compute_xx'");
  EXPECT_EQ(cause_from_output("k.cu(3): warning: unused\nk.cu(7): error: expected a \";\"\n1 error detected\n"),
            "k.cu(7): error: expected a \";\"");
  // ld names the file; collect2's line only names ld.
  EXPECT_EQ(cause_from_output("/usr/bin/ld: cannot open output file ./results/a/vector_add: No such file or "
                              "directory\ncollect2: error: ld returned 1 exit status\n"),
            "/usr/bin/ld: cannot open output file ./results/a/vector_add: No such file or directory");
  EXPECT_EQ(cause_from_output("CUDA error CUDA driver version is insufficient for CUDA runtime version at "
                              "vector_add.cu:21\n"),
            "CUDA error CUDA driver version is insufficient for CUDA runtime version at vector_add.cu:21");
  EXPECT_EQ(cause_from_output("step 1\nmismatch at 17\n\n"), "mismatch at 17");
  EXPECT_EQ(cause_from_output(""), "");
  EXPECT_LE(cause_from_output(std::string(1000, 'x')).size(), 300u);
}

TEST(KernelFailureCause, FixesNameTheInterpreterAndTheChoice) {
  FailureContext harness{"correctness", "python3", "/usr/bin/python3", true};
  auto fix = fix_for("ModuleNotFoundError: No module named 'torch.cuda'", harness);
  EXPECT_NE(fix.find("python3 (/usr/bin/python3)"), std::string::npos) << fix;
  EXPECT_NE(fix.find("lacks torch"), std::string::npos) << fix;
  EXPECT_NE(fix.find("MAGPIE_PYTHON"), std::string::npos) << fix;
  EXPECT_NE(fix.find("latency.python"), std::string::npos) << fix;
  EXPECT_EQ(fix_for("timing needs a CUDA GPU (torch.cuda.is_available() is False)", {"performance", "", "", true})
                .find("--no-perf") != std::string::npos,
            true);
  EXPECT_EQ(fix_for("CUDA error CUDA driver version is insufficient", {"correctness", "", "", false})
                .find("--no-perf"),
            std::string::npos);  // --no-perf does not help a check that needs the GPU
  EXPECT_NE(fix_for("timed out after 300.0 s (process group killed)", {"correctness", "", "", false})
                .find("correctness.timeout_seconds"),
            std::string::npos);
  EXPECT_EQ(fix_for("mismatch at 17", {}), "");
}

TEST(KernelFailureCause, OldestArchFromNvccList) {
  EXPECT_EQ(oldest_sm_arch("compute_75\ncompute_80\ncompute_86\ncompute_90\ncompute_100\n"), "sm_75");
  EXPECT_EQ(oldest_sm_arch("compute_90\ncompute_52\n"), "sm_52");
  EXPECT_EQ(oldest_sm_arch("nvcc fatal: bad option\n"), "");
}

}  // namespace
}  // namespace magpie::kernel
