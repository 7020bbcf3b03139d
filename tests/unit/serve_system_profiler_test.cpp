// The system profiler around a launched engine: which tool, the wrapped launch
// line, the stop/stats commands, and `nsys stats --report cuda_gpu_kern_sum`
// CSV as nsys writes it (the rows below are from a real capture: the header
// nsys 2023+ prints, its progress lines before it, unquoted numbers; and the
// fully quoted form with thousands separators that other versions write).
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/benchmark_environment.hpp"
#include "serve/benchmark_report_writer.hpp"
#include "serve/system_profiler.hpp"

namespace magpie::serve {
namespace {

auto only(std::string present) {
  return [present](const std::string& name) { return name == present ? "/opt/bin/" + name : std::string(); };
}

TEST(SystemProfiler, MissingToolIsItsOwnErrorBeforeAnythingStarts) {
  try {
    resolve_system_profiler("", {}, only("none"));
    FAIL() << "no tool on PATH must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_EQ(exit_code_for(e.kind()), 3);
    EXPECT_NE(std::string(e.what()).find("nsys or rocprofv3 is not on PATH"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("Nsight Systems"), std::string::npos);
  }
  // An AMD arch wants rocprofv3: nsys alone does not do.
  try {
    resolve_system_profiler("gfx942", {}, only("nsys"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rocprofv3 is not on PATH (gpu_arch gfx942)"), std::string::npos);
  }
  EXPECT_EQ(resolve_system_profiler("", {}, only("rocprofv3")).tool, SystemProfilerTool::kRocprofv3);
  auto p = resolve_system_profiler("sm_90", {}, only("nsys"));
  EXPECT_EQ(p.tool, SystemProfilerTool::kNsys);
  EXPECT_EQ(p.executable, "/opt/bin/nsys");
}

TEST(SystemProfiler, WrapsTheEngineArgv) {
  auto p = resolve_system_profiler("", {"--cuda-graph-trace=node"}, only("nsys"));
  p.output_dir = "/ws/system_profile";
  p.session = "magpie-42";
  auto argv = system_profiler_argv(p, {"vllm", "serve", "m", "--port", "8000"});
  std::vector<std::string> want{"/opt/bin/nsys", "profile", "--trace=cuda,nvtx,osrt", "--sample=none",
                                "--cpuctxsw=none", "--trace-fork-before-exec=true", "--force-overwrite=true",
                                "--session-new=magpie-42", "--output=/ws/system_profile/engine",
                                "--cuda-graph-trace=node", "--", "vllm", "serve", "m", "--port", "8000"};
  EXPECT_EQ(argv, want);
  EXPECT_EQ(nsys_stop_argv(p), (std::vector<std::string>{"/opt/bin/nsys", "stop", "--session=magpie-42"}));
  EXPECT_EQ(nsys_kernel_summary_argv(p),
            (std::vector<std::string>{"/opt/bin/nsys", "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv",
                                      "--force-export=true", "/ws/system_profile/engine.nsys-rep"}));
  EXPECT_EQ(p.capture().string(), "/ws/system_profile/engine.nsys-rep");

  auto r = resolve_system_profiler("gfx942", {}, only("rocprofv3"));
  r.output_dir = "/ws/system_profile";
  EXPECT_EQ(system_profiler_argv(r, {"vllm", "serve"}),
            (std::vector<std::string>{"/opt/bin/rocprofv3", "--sys-trace", "--output-format", "csv", "-d",
                                      "/ws/system_profile", "-o", "engine", "--", "vllm", "serve"}));
}

TEST(SystemProfiler, ParsesNsysKernelSummaryAfterItsProgressLines) {
  const char* text =
      "Generating SQLite file /ws/system_profile/engine.sqlite from /ws/system_profile/engine.nsys-rep\n"
      "Processing [/ws/system_profile/engine.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]... \n"
      "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
      "50.1,99385786,32,3105805.8,3041179.0,2987340,3777790,216832.4,flash_attention_prefill_f16\n"
      "19.0,37727461,193,195479.1,93278.0,22207,3320037,266509.9,dequant_q4_k_f16\n"
      "16.2,32179988,128,251406.2,249467.5,113790,390073,135318.3,ampere_fp16_s1688gemm_fp16_64x128_sliced1x2_ldg8_f2f_tn\n"
      "\n"
      "Processing [/ws/system_profile/engine.sqlite] with [...] done\n";
  auto rows = parse_nsys_kernel_summary(text, "kern.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "flash_attention_prefill_f16");
  EXPECT_DOUBLE_EQ(rows[0].percent, 50.1);
  EXPECT_DOUBLE_EQ(rows[0].total_ns, 99385786);
  EXPECT_EQ(rows[0].instances, 32);
  EXPECT_DOUBLE_EQ(*rows[0].avg_ns, 3105805.8);
  EXPECT_DOUBLE_EQ(*rows[0].med_ns, 3041179.0);
  EXPECT_DOUBLE_EQ(*rows[0].min_ns, 2987340);
  EXPECT_DOUBLE_EQ(*rows[0].max_ns, 3777790);
  EXPECT_DOUBLE_EQ(*rows[0].stddev_ns, 216832.4);
  EXPECT_EQ(rows[2].instances, 128);
}

TEST(SystemProfiler, ParsesTheQuotedFormWithSeparatorsAndCommasInNames) {
  const char* text =
      "\"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\","
      "\"StdDev (ns)\",\"Name\"\n"
      "\"19.2\",\"1,920,000\",\"50\",\"38400\",\"38000\",\"35000\",\"42000\",\"2000\","
      "\"void sbd::MultUnified<double, (int)0, (int)1>(double*, double const*)\"\n"
      "\"58.5\",\"5,850,000\",\"50\",\"117000\",\"116000\",\"100000\",\"130000\",\"4000\","
      "\"void sbd::MultAlphaBeta<double>(double*, double const*)\"\n";
  auto rows = parse_nsys_kernel_summary(text, "kern.csv");
  ASSERT_EQ(rows.size(), 2u);
  // Largest total first, whatever order nsys printed.
  EXPECT_EQ(rows[0].name, "void sbd::MultAlphaBeta<double>(double*, double const*)");
  EXPECT_DOUBLE_EQ(rows[0].total_ns, 5850000);
  EXPECT_EQ(rows[1].name, "void sbd::MultUnified<double, (int)0, (int)1>(double*, double const*)");
}

TEST(SystemProfiler, NoKernelsAndGarbage) {
  EXPECT_TRUE(parse_nsys_kernel_summary(
                  "Processing [x.sqlite] with [cuda_gpu_kern_sum.py]... \n"
                  "SKIPPED: x.sqlite does not contain CUDA kernel data.\n",
                  "k")
                  .empty());
  EXPECT_THROW(parse_nsys_kernel_summary("nsys: command not understood\n", "k"), Error);
  EXPECT_THROW(parse_nsys_kernel_summary("Time (%),Total Time (ns),Instances,Name\nabc,def,1,k\n", "k"), Error);
}

TEST(SystemProfiler, SumsRocprofKernelDispatchesPerKernel) {
  const char* csv =
      "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\","
      "\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"
      "\"KERNEL_DISPATCH\",\"1\",\"1\",\"0\",\"7\",\"1\",\"3\",\"gemm\",\"1\",\"1000\",\"4000\"\n"
      "\"KERNEL_DISPATCH\",\"1\",\"1\",\"0\",\"7\",\"2\",\"4\",\"relu\",\"2\",\"4000\",\"5000\"\n"
      "\"KERNEL_DISPATCH\",\"1\",\"1\",\"0\",\"7\",\"3\",\"3\",\"gemm\",\"3\",\"5000\",\"10000\"\n";
  auto rows = summarize_rocprof_kernel_trace(csv, "kernel_trace.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "gemm");
  EXPECT_DOUBLE_EQ(rows[0].total_ns, 8000);
  EXPECT_EQ(rows[0].instances, 2);
  EXPECT_DOUBLE_EQ(rows[0].percent, 8000.0 / 9000.0 * 100.0);
  EXPECT_DOUBLE_EQ(*rows[0].max_ns, 5000);
}

TEST(SystemProfiler, YamlKeysAndTheFlag) {
  auto c = parse_benchmark_yaml(R"(benchmark:
  model: m
  profiler:
    system_profiler: {enabled: true, profile_args: "--cuda-graph-trace=node --delay 5"}
)", "b.yaml");
  EXPECT_TRUE(c.system_profiler);
  EXPECT_EQ(c.system_profiler_args, (std::vector<std::string>{"--cuda-graph-trace=node", "--delay", "5"}));
  EXPECT_EQ(c.resolved_run_kind(), "diagnostic");
  for (const auto& w : c.warnings) EXPECT_EQ(w.find("not applied"), std::string::npos) << w;
  auto l = parse_benchmark_yaml(
      "benchmark: {model: m, profiler: {system_profiler: {enabled: true, profile_args: [--delay, '5']}}}", "b");
  EXPECT_EQ(l.system_profiler_args, (std::vector<std::string>{"--delay", "5"}));
  // With a YAML the flag is one of Magpie's ignored ones, and says so.
  BenchmarkFlags f;
  f.system_profiler = true;
  auto y = parse_benchmark_yaml("benchmark: {model: m, profiler: {}}", "b");
  apply_flags(y, f, true);
  EXPECT_FALSE(y.system_profiler);
  EXPECT_FALSE(y.warnings.empty());
}

TEST(SystemProfiler, ReportBlockAndKernelSummary) {
  BenchmarkReport r;
  r.framework = "vllm";
  auto j = report_json(r);
  EXPECT_TRUE(j.at("system_profiler").is_null());
  SystemProfileBlock b;
  b.tool = "nsys";
  b.capture = "/ws/system_profile/engine.nsys-rep";
  b.kernels = parse_nsys_kernel_summary(
      "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
      "60.0,6000000,3,2000000.0,2000000.0,1,3,0.5,ampere_gemm\n",
      "k");
  r.system_profiler = b;
  j = report_json(r);
  EXPECT_EQ(j["system_profiler"]["tool"], "nsys");
  EXPECT_EQ(j["system_profiler"]["kernels"][0]["name"], "ampere_gemm");
  EXPECT_EQ(j["system_profiler"]["kernels"][0]["instances"], 3);
  EXPECT_NE(summary_text(r).find("System profiler (nsys)"), std::string::npos);
}

TEST(BenchmarkEnvironment, RecordsWhatTheEngineGot) {
  BenchmarkReport r;
  r.model = "org/model";
  ServerInfo s;
  s.mode = "docker";
  s.env = {{"CUDA_VISIBLE_DEVICES", "1"}, {"VLLM_USE_V1", "1"}};
  s.image = "vllm/vllm-openai:v0.11.0";
  s.image_digest = "sha256:abc";
  s.model_revision = "0123abcd";
  r.server = s;
  GpuSelection g;
  g.indices = {1};
  r.gpu_selection = g;
  auto req = environment_request(r);
  EXPECT_EQ(req.model, "org/model");
  EXPECT_EQ(req.model_revision, "0123abcd");
  EXPECT_EQ(req.image, "vllm/vllm-openai:v0.11.0");
  EXPECT_EQ(req.image_digest, "sha256:abc");
  EXPECT_EQ(req.env_passed.at("VLLM_USE_V1"), "1");
  ASSERT_TRUE(req.gpu_indices.has_value());
  EXPECT_EQ(*req.gpu_indices, std::vector<int>{1});
  // Written into the report with the build that made it.
  r.environment = capture_benchmark_environment(r);
  auto j = report_json(r);
  EXPECT_EQ(j["environment"]["image_digest"], "sha256:abc");
  EXPECT_EQ(j["environment"]["env_vars"]["VLLM_USE_V1"], "1");
  EXPECT_FALSE(j["environment"]["magpie_version"].get<std::string>().empty());
  EXPECT_NE(summary_text(r).find("Image: vllm/vllm-openai:v0.11.0 (sha256:abc)"), std::string::npos);
}

}  // namespace
}  // namespace magpie::serve
