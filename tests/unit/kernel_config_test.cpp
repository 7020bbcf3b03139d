#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "core/error.hpp"
#include "kernel/evaluator.hpp"
#include "kernel/kernel_config.hpp"

namespace magpie::kernel {
namespace {

VarLookup vars(std::map<std::string, std::string> m) {
  return [m](const std::string& n) -> std::optional<std::string> {
    auto it = m.find(n);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

KernelConfig parse(const std::string& yaml, std::map<std::string, std::string> env = {}) {
  return parse_kernel_config(yaml, "test.yaml", "/base", vars(std::move(env)));
}

// Expects Error of `kind` whose message contains every needle.
void expect_error(const std::string& yaml, ErrorKind kind, std::initializer_list<const char*> needles) {
  try {
    parse(yaml);
    FAIL() << "no error for:\n" << yaml;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(KernelConfig, SingleKernelWithDefaults) {
  auto cfg = parse("kernel:\n  type: CUDA\n  source_files: [k.cu]\n  testcase_command: ./k --check\n");
  ASSERT_EQ(cfg.kernels.size(), 1u);
  const auto& k = cfg.kernels[0];
  EXPECT_EQ(k.id, "kernel");
  EXPECT_EQ(k.type, KernelType::kCuda);
  EXPECT_EQ(k.working_dir, "/base");
  EXPECT_EQ(k.source_files.at(0), "/base/k.cu");
  ASSERT_EQ(k.testcase_command.size(), 1u);
  EXPECT_EQ(k.testcase_command[0], (Command{"./k", "--check"}));
  EXPECT_EQ(cfg.performance.timeout_seconds, 300);
  EXPECT_EQ(cfg.correctness.backend, "testcase");
  EXPECT_DOUBLE_EQ(cfg.correctness.atol, 1e-6);
  EXPECT_DOUBLE_EQ(cfg.correctness.rtol, 1e-5);
  EXPECT_EQ(cfg.correctness.accordo_timeout_seconds, 30);
  EXPECT_TRUE(cfg.latency.enabled);
  EXPECT_EQ(cfg.latency.method, "auto");
  EXPECT_DOUBLE_EQ(cfg.latency.rep_ms, 20);
  EXPECT_EQ(cfg.latency.n_retries, 5);
  EXPECT_EQ(cfg.latency.warmup_iters, 5);
  EXPECT_EQ(cfg.latency.seed, 42u);
  EXPECT_EQ(cfg.latency.timeout_seconds, 120);
}

TEST(KernelConfig, TypesAreCaseInsensitiveWithAliases) {
  for (auto [text, type] : std::initializer_list<std::pair<const char*, KernelType>>{
           {"hip", KernelType::kHip}, {"Torch", KernelType::kPytorch}, {"PY", KernelType::kPytorch},
           {"pytorch", KernelType::kPytorch}, {"Triton", KernelType::kTriton}}) {
    EXPECT_EQ(parse_kernel_type(text), type) << text;
  }
  expect_error("kernel:\n  type: opencl\n", ErrorKind::kUsage, {"test.yaml", "opencl", "hip, cuda"});
}

TEST(KernelConfig, CommandForms) {
  auto cfg = parse(
      "kernels:\n"
      "  - id: a\n    type: hip\n    testcase_command: \"run 'two words'\"\n"
      "  - id: b\n    type: hip\n    testcase_command: [python3, t.py, --n, 4]\n"
      "  - id: c\n    type: hip\n    compile_command: [[make, a], [make, b]]\n");
  EXPECT_EQ(cfg.kernels[0].testcase_command[0], (Command{"run", "two words"}));
  EXPECT_EQ(cfg.kernels[1].testcase_command[0], (Command{"python3", "t.py", "--n", "4"}));
  ASSERT_EQ(cfg.kernels[2].compile_command.size(), 2u);
  EXPECT_EQ(cfg.kernels[2].compile_command[1], (Command{"make", "b"}));
  expect_error("kernel:\n  type: hip\n  testcase_command: [a, [b]]\n", ErrorKind::kUsage,
               {"kernel.testcase_command", "mixes"});
}

TEST(KernelConfig, ExpandsVariablesInPathsAndCommands) {
  auto cfg = parse(
      "kernel:\n  type: cuda\n  working_dir: $ROOT/k\n  source_files: [\"${NAME}.cu\"]\n"
      "  compile_command: nvcc -arch=${ARCH} -o out ${NAME}.cu $UNSET\n",
      {{"ROOT", "/r"}, {"NAME", "add"}, {"ARCH", "sm_90"}});
  const auto& k = cfg.kernels[0];
  EXPECT_EQ(k.working_dir, "/r/k");
  EXPECT_EQ(k.source_files[0], "/r/k/add.cu");
  EXPECT_EQ(k.compile_command[0], (Command{"nvcc", "-arch=sm_90", "-o", "out", "add.cu", "$UNSET"}));
}

TEST(KernelConfig, SectionsAndOurSettings) {
  auto cfg = parse(
      "kernel: {type: triton, bench_target: {module: sm, callable: softmax}}\n"
      "performance: {backend: ncu, timeout_seconds: 60, rounds: 7, threshold: 0.01,\n"
      "              ncu: {metrics: [gpu__time_duration.sum]}}\n"
      "correctness: {backend: accordo, accordo: {atol: 1e-3, rtol: 1e-2, equal_nan: true, timeout_seconds: 9}}\n"
      "latency: {enabled: false, primary_metric: wall_median_ms, kernel_filter: 'soft.*', pythonpath: [lib]}\n");
  EXPECT_EQ(cfg.kernels[0].bench_target.module, "sm");
  EXPECT_EQ(cfg.kernels[0].bench_target.get_inputs, "get_inputs");
  EXPECT_EQ(cfg.performance.backend, "ncu");
  EXPECT_EQ(cfg.performance.rounds, 7);
  EXPECT_EQ(cfg.performance.ncu_metrics.at(0), "gpu__time_duration.sum");
  EXPECT_TRUE(cfg.correctness.tolerances_set);
  EXPECT_DOUBLE_EQ(cfg.correctness.atol, 1e-3);
  EXPECT_TRUE(cfg.correctness.equal_nan);
  EXPECT_EQ(cfg.correctness.accordo_timeout_seconds, 9);
  EXPECT_FALSE(cfg.latency.enabled);
  EXPECT_EQ(cfg.latency.kernel_filter, "soft.*");
  EXPECT_EQ(cfg.latency.pythonpath.at(0), "/base/lib");
}

TEST(KernelConfig, ErrorsNameFileKeyAndFix) {
  expect_error("kernel: [1, 2\n", ErrorKind::kBadFormat, {"test.yaml", "line"});
  expect_error("performance: {}\n", ErrorKind::kUsage, {"no kernels", "kernel:"});
  expect_error("kernel: {type: hip}\nperformance: {timeout_seconds: soon}\n", ErrorKind::kUsage,
               {"performance.timeout_seconds", "soon", "number"});
  expect_error("kernels:\n  - {id: a, type: hip}\n  - {id: a, type: cuda}\n", ErrorKind::kUsage, {"duplicate", "'a'"});
  expect_error("kernel: {type: hip, bench_target: {module: m}}\n", ErrorKind::kUsage, {"kernel.bench_target", "callable"});
  expect_error("kernel: {type: hip}\nlatency: {method: magic}\n", ErrorKind::kUsage, {"latency.method", "cuda_graph"});
}

TEST(KernelConfig, CuptiKindDefaultsToAutoAndRejectsOthers) {
  EXPECT_EQ(parse("kernel: {type: cuda}\n").performance.cupti_kind, "auto");
  EXPECT_EQ(parse("kernel: {type: cuda}\nperformance: {cupti_kind: serial}\n").performance.cupti_kind, "serial");
  EXPECT_EQ(parse("kernel: {type: cuda}\nperformance: {cupti_kind: concurrent}\n").performance.cupti_kind,
            "concurrent");
  auto cfg = parse("kernel: {type: cuda}\nperformance: {cupti_kind: auto}\n");
  EXPECT_TRUE(cfg.warnings.empty());  // a known key, not "unknown key ignored"
  expect_error("kernel: {type: cuda}\nperformance: {cupti_kind: Serial}\n", ErrorKind::kUsage,
               {"test.yaml", "performance.cupti_kind", "'Serial'", "auto", "concurrent or serial"});
  expect_error("kernel: {type: cuda}\nperformance: {cupti_kind: [serial]}\n", ErrorKind::kUsage,
               {"performance.cupti_kind"});
}

TEST(KernelConfig, UnknownKeysWarnAndRayImpliesRay) {
  auto cfg = parse("kernel: {type: hip, colour: blue}\nray_config: {cluster_address: auto}\n");
  ASSERT_FALSE(cfg.warnings.empty());
  EXPECT_NE(cfg.warnings[0].find("colour"), std::string::npos);
  EXPECT_EQ(cfg.environment, "ray");
}

TEST(KernelConfig, GpuSelectionAndMonitorAreOffUnlessAsked) {
  auto cfg = parse("kernel: {type: cuda, testcase_command: ./t}\n");
  EXPECT_FALSE(cfg.gpu_selection.has_value());
  EXPECT_FALSE(cfg.gpu_monitor.enabled);
  EXPECT_DOUBLE_EQ(cfg.gpu_monitor.interval_s, 0.5);  // finer than serving's 2 s: kernel runs are short
}

TEST(KernelConfig, GpuSelectionDefaultsToOneGpuWithMagpiesDefaults) {
  auto cfg = parse("kernel: {type: cuda, testcase_command: ./t}\ngpu_selection: {}\n");
  ASSERT_TRUE(cfg.gpu_selection.has_value());
  EXPECT_EQ(cfg.gpu_selection->count, 1);
  EXPECT_TRUE(cfg.gpu_selection->auto_select);
  EXPECT_DOUBLE_EQ(cfg.gpu_selection->min_free_memory_gb, 8);
  EXPECT_TRUE(cfg.gpu_selection->candidates.empty());
  EXPECT_DOUBLE_EQ(cfg.gpu_selection->wait_s, 0);
  // A bare key means the same.
  EXPECT_EQ(parse("kernel: {type: cuda}\ngpu_selection:\n").gpu_selection->count, 1);
}

TEST(KernelConfig, GpuSelectionAndMonitorKeys) {
  auto cfg = parse(
      "kernel: {type: cuda, testcase_command: ./t}\n"
      "gpu_selection: {auto: false, min_free_memory_gb: 20, count: 2, candidates: [3, 1], wait_sec: 90}\n"
      "gpu_monitor: {enabled: true, interval_sec: 0.25}\n");
  ASSERT_TRUE(cfg.gpu_selection.has_value());
  EXPECT_FALSE(cfg.gpu_selection->auto_select);
  EXPECT_DOUBLE_EQ(cfg.gpu_selection->min_free_memory_gb, 20);
  EXPECT_EQ(cfg.gpu_selection->count, 2);
  EXPECT_EQ(cfg.gpu_selection->candidates, (std::vector<int>{3, 1}));
  EXPECT_DOUBLE_EQ(cfg.gpu_selection->wait_s, 90);
  EXPECT_TRUE(cfg.gpu_monitor.enabled);
  EXPECT_DOUBLE_EQ(cfg.gpu_monitor.interval_s, 0.25);
  EXPECT_TRUE(cfg.warnings.empty()) << cfg.warnings.front();
  // candidates as the benchmark YAML also takes them: "0,2".
  EXPECT_EQ(parse("kernel: {type: cuda}\ngpu_selection: {candidates: \"0, 2\"}\n").gpu_selection->candidates,
            (std::vector<int>{0, 2}));
}

TEST(KernelConfig, GpuKeysRejectBadValuesAndWarnOnTypos) {
  expect_error("kernel: {type: cuda}\ngpu_selection: {count: 0}\n", ErrorKind::kUsage,
               {"test.yaml", "gpu_selection.count", "at least 1"});
  expect_error("kernel: {type: cuda}\ngpu_selection: {candidates: [a]}\n", ErrorKind::kUsage,
               {"gpu_selection.candidates[0]", "not a GPU index"});
  expect_error("kernel: {type: cuda}\ngpu_selection: [0]\n", ErrorKind::kUsage, {"gpu_selection", "expected a map"});
  expect_error("kernel: {type: cuda}\ngpu_monitor: {interval_sec: 0}\n", ErrorKind::kUsage,
               {"gpu_monitor.interval_sec", "above 0"});
  auto cfg = parse("kernel: {type: cuda}\ngpu_selecton: {count: 1}\ngpu_monitor: {enabled: true, interval_ms: 5}\n");
  ASSERT_EQ(cfg.unknown_keys.size(), 2u);
  EXPECT_NE(cfg.unknown_keys[0].find("did you mean 'gpu_selection'"), std::string::npos) << cfg.unknown_keys[0];
  EXPECT_NE(cfg.unknown_keys[1].find("gpu_monitor.interval_ms"), std::string::npos) << cfg.unknown_keys[1];
}

// latency.python: the harness's interpreter; a path is the YAML's, a bare name is PATH's.
TEST(KernelConfig, HarnessInterpreterKey) {
  auto cfg = parse("kernel: {id: k, type: pytorch}\nlatency: {python: .venv/bin/python}\n");
  EXPECT_EQ(cfg.latency.python, "/base/.venv/bin/python");
  EXPECT_TRUE(cfg.unknown_keys.empty());
  EXPECT_EQ(harness_python(cfg.latency), std::getenv("MAGPIE_PYTHON") ? std::getenv("MAGPIE_PYTHON")
                                                                        : std::string("/base/.venv/bin/python"));
  cfg = parse("kernel: {id: k, type: pytorch}\nlatency: {python: python3.11}\n");
  EXPECT_EQ(cfg.latency.python, "python3.11");
  EXPECT_EQ(harness_python(LatencySettings{}), std::getenv("MAGPIE_PYTHON") ? std::getenv("MAGPIE_PYTHON") : "python3");
}

}  // namespace
}  // namespace magpie::kernel
