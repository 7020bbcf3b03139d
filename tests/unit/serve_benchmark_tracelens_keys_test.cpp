// profiler.tracelens.* and gap_analysis.{find_kernel_sources, kernel_source_repos}
// in the benchmark YAML: each key is parsed into the typed config, no longer
// reported as "not applicable here", and changes what the analysis
// writes (run here on real traces from tests/data, the same calls the
// benchmark runner makes after a profiled run).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/tracelens_report.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "report/xlsx_writer.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/profiling.hpp"

namespace magpie::serve {
namespace {

namespace fs = std::filesystem;

const fs::path kPublic = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/public_traces";
const fs::path kSglang =
    kPublic / "tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz";

BenchmarkConfig parse(const std::string& tracelens_body, const std::string& gap_body = "") {
  std::string yaml =
      "benchmark:\n  framework: vllm\n  model: m\n  profiler:\n    torch_profiler: {enabled: "
      "true}\n"
      "    tracelens:\n      enabled: true\n" +
      tracelens_body;
  if (!gap_body.empty()) yaml += "  gap_analysis:\n" + gap_body;
  return parse_benchmark_yaml(yaml, "test.yaml");
}

std::string read_text_file(const fs::path& p) { return std::string(read_file(p).view()); }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("magpie_tlkeys_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

analysis::TraceLensResult run(const BenchmarkConfig& c, const fs::path& trace,
                              const fs::path& out) {
  analysis::TraceLensOptions o = tracelens_options(c.tracelens_settings);
  o.trace = trace;
  o.output_dir = out;
  return analysis::run_tracelens(o);
}

TEST(BenchmarkTraceLensKeys, EveryKeyIsParsedAndNoneIsReportedUnapplied) {
  BenchmarkConfig c = parse(
      "      analysis_mode: classic\n      analysis_stages: pd, decode_only\n      num_steps: 8\n"
      "      export_format: excel\n      gpu_arch_config: /tmp/arch.json\n"
      "      perf_report_enabled: false\n      multi_rank_report_enabled: true\n",
      "    find_kernel_sources: true\n    kernel_source_repos: [/a, /b]\n");
  const auto& t = c.tracelens_settings;
  EXPECT_EQ(t.analysis_mode, "pytorch");
  EXPECT_EQ(t.analysis_stages,
            (std::vector{analysis::Stage::kPrefillDecode, analysis::Stage::kDecode}));
  EXPECT_EQ(t.num_steps, 8);
  EXPECT_EQ(t.export_format, "excel");
  EXPECT_EQ(t.gpu_arch_config, "/tmp/arch.json");
  EXPECT_FALSE(t.perf_report_enabled);
  EXPECT_EQ(t.multi_rank_report_enabled, true);
  EXPECT_TRUE(c.gap.find_kernel_sources);
  EXPECT_EQ(c.gap.kernel_source_repos, (std::vector<std::string>{"/a", "/b"}));
  for (const auto& w : c.warnings) {
    EXPECT_EQ(w.find("not applicable here"), std::string::npos) << w;
  }
  const analysis::TraceLensOptions o = tracelens_options(t);
  EXPECT_EQ(o.mode, "pytorch");
  EXPECT_EQ(o.num_steps, 8u);
  EXPECT_FALSE(o.write_csv);
  EXPECT_TRUE(o.write_excel);
  EXPECT_EQ(o.gpu_arch_file, fs::path("/tmp/arch.json"));
  EXPECT_FALSE(o.perf_report);
  EXPECT_EQ(o.collective_report, true);
  // A comma string of repos, "all" stages, and defaults.
  BenchmarkConfig d = parse("      analysis_stages: all\n", "    kernel_source_repos: /x, /y\n");
  EXPECT_TRUE(d.tracelens_settings.analysis_stages.empty());
  EXPECT_EQ(d.tracelens_settings.num_steps, 32);
  EXPECT_EQ(d.tracelens_settings.multi_rank_report_enabled, std::nullopt);
  EXPECT_EQ(d.gap.kernel_source_repos, (std::vector<std::string>{"/x", "/y"}));
}

TEST(BenchmarkTraceLensKeys, BadValuesNameTheKey) {
  auto expect_bad = [](const std::string& body, const std::string& needle) {
    try {
      parse(body);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_bad("      analysis_mode: training\n", "tracelens.analysis_mode: expected inference or pytorch (classic), got 'training'");
  expect_bad("      analysis_stages: [decode, warmup]\n", "unknown stage 'warmup'");
  expect_bad("      export_format: pdf\n", "tracelens.export_format: expected csv, excel or both, got 'pdf'");
  expect_bad("      num_steps: -1\n", "tracelens.num_steps: expected an integer of 0 or more, got '-1'");
}

TEST(BenchmarkTraceLensKeys, StagesExportFormatAndPerfReportChangeTheFiles) {
  const fs::path out = fresh_dir("stages");
  // Only decode, CSV and the perf report (defaults besides the stage).
  auto r = run(parse("      analysis_stages: [decode]\n"), kSglang, out / "a");
  ASSERT_EQ(r.stage_results.size(), 1u);
  EXPECT_EQ(r.stage_results[0].stage, analysis::Stage::kDecode);
  EXPECT_TRUE(fs::exists(out / "a/tracelens/decode_only/kernel_summary.csv"));
  EXPECT_FALSE(fs::exists(out / "a/tracelens/decode_only/perf_report.xlsx"));
  // perf_report_enabled false: the compact summary and the manifest only.
  r = run(parse("      analysis_stages: decode\n      perf_report_enabled: false\n"), kSglang,
          out / "b");
  EXPECT_FALSE(fs::exists(out / "b/tracelens/decode_only"));
  EXPECT_TRUE(fs::exists(r.stage_results.at(0).simple_summary_file));
  if (report::xlsx_available()) {
    r = run(parse("      analysis_stages: decode\n      export_format: excel\n"), kSglang,
            out / "c");
    EXPECT_TRUE(fs::exists(out / "c/tracelens/decode_only/perf_report.xlsx"));
    EXPECT_FALSE(fs::exists(out / "c/tracelens/decode_only/kernel_summary.csv"));
  }
  fs::remove_all(out);
}

TEST(BenchmarkTraceLensKeys, GpuArchConfigIsRead) {
  const fs::path out = fresh_dir("arch");
  // The trace ran on an MI300X; the file renames nothing but must be read:
  // a missing file is an error naming it, a present one is used.
  try {
    run(parse("      gpu_arch_config: " + (out / "missing.json").string() + "\n"), kSglang, out);
    ADD_FAILURE() << "a missing gpu_arch_config was ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos) << e.what();
  }
  std::ofstream(out / "arch.json")
      << R"({"name": "MyAccel", "mem_bw_tbps": 1, "matrix_tflops": {"bf16": 100}})";
  BenchmarkConfig c = parse("      gpu_arch_config: " + (out / "arch.json").string() + "\n");
  analysis::TraceLensOptions o = tracelens_options(c.tracelens_settings);
  o.trace = kSglang;
  o.output_dir = out;
  o.gpu_arch = "MyAccel";  // only a GPU from the file can be named
  EXPECT_EQ(analysis::run_tracelens(o).gpu_arch_platform, "MyAccel");
  fs::remove_all(out);
}

TEST(BenchmarkTraceLensKeys, NumStepsLimitsThePickToTheLastIterations) {
  const fs::path trace =
      fs::path(MAGPIE_SHARED_TRACES) / "h200/llama_4layer_bs16_prompt1024_decode16.json.gz";
  if (!fs::exists(trace))
    GTEST_SKIP() << trace << " is absent: no shared trace collection on this machine";
  const fs::path out = fresh_dir("steps");
  auto r = run(parse("      analysis_stages: decode\n      num_steps: 4\n"), trace, out);
  ASSERT_EQ(r.stage_results.size(), 1u);
  const auto& pick = r.stage_results[0].pick;
  EXPECT_EQ(pick.candidates, 4u);
  EXPECT_NE(pick.selection_reason.find("the last 4 of"), std::string::npos)
      << pick.selection_reason;
  auto all = run(parse("      analysis_stages: decode\n      num_steps: 0\n"), trace, out / "all");
  EXPECT_GT(all.stage_results.at(0).pick.candidates, 4u);
  fs::remove_all(out);
}

TEST(BenchmarkTraceLensKeys, ModeAndMultiRankReport) {
  const fs::path out = fresh_dir("ranks");
  const fs::path ranks = kPublic / "hta__trace_filter";
  auto r = run(parse("      analysis_mode: pytorch\n"), ranks, out / "a");
  EXPECT_EQ(r.mode, "pytorch");
  EXPECT_EQ(r.num_ranks, 2u);
  ASSERT_TRUE(r.collective_report);  // on by default in pytorch mode
  EXPECT_EQ(r.collective_report->collective_kernels, 20u);
  EXPECT_TRUE(fs::exists(out / "a/tracelens/collective_report/collective_summary.csv"));
  r = run(parse("      analysis_mode: pytorch\n      multi_rank_report_enabled: false\n"), ranks,
          out / "b");
  EXPECT_FALSE(r.collective_report);
  EXPECT_FALSE(fs::exists(out / "b/tracelens/collective_report"));
  const auto manifest = nlohmann::json::parse(read_text_file(r.manifest));
  EXPECT_FALSE(manifest.contains("collective_report"));
  fs::remove_all(out);
}

TEST(BenchmarkGapKeys, FindKernelSourcesAddsSourceColumns) {
  const fs::path out = fresh_dir("gap");
  const fs::path traces = out / "traces";
  fs::create_directories(traces);
  fs::copy_file(kPublic / "hta__triton_example__triton_example.json.gz", traces / "t.json.gz");
  const std::string repo =
      (fs::path(MAGPIE_SOURCE_DIR) / "tests/data/sources/fixture_repo").string();
  BenchmarkConfig c =
      parse("", "    find_kernel_sources: true\n    kernel_source_repos: [" + repo + "]\n");
  GapOutcome g = run_profile_gap_analysis(traces, out / "gap", c.gap);
  ASSERT_TRUE(g.errors.empty()) << g.errors.front();
  const std::string csv = read_text_file(out / "gap/gap_analysis.csv");
  EXPECT_NE(csv.find("source_file"), std::string::npos);
  BenchmarkConfig off = parse("", "    find_kernel_sources: false\n");
  run_profile_gap_analysis(traces, out / "gap_off", off.gap);
  EXPECT_EQ(read_text_file(out / "gap_off/gap_analysis.csv").find("source_file"),
            std::string::npos);
  fs::remove_all(out);
}

}  // namespace
}  // namespace magpie::serve
