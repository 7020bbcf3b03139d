// Stage split, op attribution, graph-capture alignment and the report tables
// on small hand-written Kineto traces whose answers are known.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "analysis/graph_capture_alignment.hpp"
#include "analysis/roofline_table.hpp"
#include "analysis/stage_splitter.hpp"
#include "analysis/tracelens_report.hpp"
#include "analysis/tracelens_tables.hpp"
#include "core/file_io.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::analysis {
namespace {

trace::Trace parse(const std::string& json) {
  PaddedBuffer b(json.size());
  std::memcpy(b.data(), json.data(), json.size());
  return trace::parse_kineto(b, "test.json", {});
}

std::string device_props() {
  return R"("deviceProperties":[{"id":0,"name":"NVIDIA H200","computeMajor":9,"computeMinor":0,"numSms":132,"totalGlobalMem":150109880320}])";
}

// One forward: embedding(ids [4, seq]) then mm [4·seq, 64]×[64, 128] whose
// kernel runs `kernel_us`; ids count from `id`.
std::string forward(int64_t t0, int seq, int id, double kernel_us) {
  const int m = 4 * seq;
  return fmt::format(
      R"({{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"External id":{},"Input Dims":[[1000,64],[4,{}]],"Input type":["c10::BFloat16","long int"]}}}},)"
      R"({{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{},"dur":20,"args":{{"External id":{},"Input Dims":[[{},64],[64,128]],"Input type":["c10::BFloat16","c10::BFloat16"]}}}},)"
      R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":2,"args":{{"External id":{},"correlation":{}}}}},)"
      R"({{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":{},"dur":{},"args":{{"device":0,"stream":7,"correlation":{},"External id":{}}}}})",
      t0 + 1, id, seq, t0 + 10, id + 1, m, t0 + 12, id + 1, id + 1, t0 + 50, kernel_us, id + 1,
      id + 1);
}

std::string step(int64_t t0, const std::string& name) {
  return fmt::format(
      R"({{"ph":"X","cat":"user_annotation","name":"{}","pid":1,"tid":1,"ts":{},"dur":100,"args":{{}}}},)",
      name, t0);
}

std::string llama_like() {
  // An unannotated prefill (seq 16), then two annotated decode steps (seq 1).
  return "{\"traceEvents\":[" + forward(0, 16, 10, 40) + "," + step(200, "decode_step_0") +
         forward(200, 1, 20, 10) + "," + step(400, "decode_step_1") + forward(400, 1, 30, 12) +
         "]," + device_props() + "}";
}

TEST(StageSplitter, AnnotatedDecodeStepsAndUnannotatedPrefill) {
  trace::Trace t = parse(llama_like());
  auto links = trace::link_trace(t);
  StageSplit s = split_stages(t, links);
  ASSERT_EQ(s.iterations.size(), 3u);
  EXPECT_EQ(s.iterations[0].stage, Stage::kPrefill);
  EXPECT_EQ(s.iterations[0].step.grammar, "pattern");
  EXPECT_EQ(s.iterations[0].step.batch_size, 4);
  EXPECT_EQ(s.iterations[1].stage, Stage::kDecode);
  EXPECT_EQ(s.iterations[1].step.batch_size, 4);  // from the token ids
  for (const auto& it : s.iterations) EXPECT_EQ(it.gpu_rows.size(), 1u);
  ASSERT_EQ(s.picks.size(), 2u);
  EXPECT_EQ(s.picks[0].stage, Stage::kDecode);
  EXPECT_EQ(s.picks[0].candidates, 2u);
  EXPECT_NE(s.picks[0].selection_reason.find("largest batch size (4)"), std::string::npos);
  EXPECT_EQ(s.picks[1].stage, Stage::kPrefill);
  EXPECT_NE(s.method.find("op pattern"), std::string::npos);
}

TEST(StageSplitter, NoAnnotationsFallsBackToRepeatingPattern) {
  trace::Trace t = parse("{\"traceEvents\":[" + forward(0, 8, 10, 5) + "," +
                         forward(200, 1, 20, 5) + "," + forward(400, 1, 30, 5) + "]}");
  auto links = trace::link_trace(t);
  StageSplit s = split_stages(t, links);
  ASSERT_EQ(s.iterations.size(), 3u);
  EXPECT_EQ(s.iterations[0].stage, Stage::kPrefill);
  EXPECT_EQ(s.iterations[2].stage, Stage::kDecode);
  EXPECT_FALSE(s.warnings.empty());  // says the annotations were missing
}

TEST(RooflineTable, GemmOpOnH200) {
  trace::Trace t = parse(llama_like());
  auto links = trace::link_trace(t);
  StageSplit s = split_stages(t, links);
  const Iteration& prefill = s.iterations[0];
  const GpuArch arch = *find_gpu_arch("H200", builtin_gpu_archs());
  StageAnalysis a =
      analyze_stage({{&t, &links, nullptr, nullptr}, prefill.gpu_rows, &prefill.step, &arch});
  ASSERT_EQ(a.groups.size(), 1u);
  const OpGroup& g = a.groups[0];
  EXPECT_EQ(g.name, "aten::mm");
  EXPECT_EQ(g.category, "GEMM");
  ASSERT_TRUE(g.cost);
  const double M = 64, N = 128, K = 64;
  EXPECT_DOUBLE_EQ(g.cost->flops, 2 * M * N * K);
  EXPECT_DOUBLE_EQ(g.cost->bytes, (M * K + K * N + M * N) * 2);
  // AI = 1048576 / 40960 = 25.6 FLOP/B, far below H200's ridge (989e12 / 4.8e12 ≈ 206).
  EXPECT_EQ(g.first.point.bound, "memory");
  EXPECT_NEAR(g.first.point.roofline_time_us, g.cost->bytes / 4.8e6, 1e-12);
  EXPECT_NEAR(g.mean_achieved_tflops, 2 * M * N * K / (40 * 1e6), 1e-12);
  EXPECT_NEAR(g.mean_pct_roofline, g.cost->bytes / 4.8e6 / 40 * 100, 1e-9);
}

TEST(TraceLensTables, SimpleSummaryHasMagpieColumnsAndPercentages) {
  trace::Trace t = parse(llama_like());
  auto links = trace::link_trace(t);
  std::vector<uint32_t> all;
  for (uint32_t r = 0; r < t.events.size(); ++r) {
    if (trace::is_gpu_activity(t.events.category[r])) all.push_back(r);
  }
  StageAnalysis a = analyze_stage({{&t, &links, nullptr, nullptr}, all, nullptr, nullptr});
  StageTables tables = make_stage_tables(a);
  EXPECT_EQ(tables.simple_summary.columns, simple_summary_columns());
  EXPECT_EQ(simple_summary_columns().front(), "source_category");
  // Magpie's 21 columns in its order, then our peak_check.
  EXPECT_EQ(simple_summary_columns()[20], "input_type");
  EXPECT_EQ(simple_summary_columns().back(), "peak_check");
  EXPECT_EQ(simple_summary_columns().size(), 22u);
  double total = 0;
  for (const auto& row : tables.simple_summary.rows) total += std::get<double>(row[6]);
  EXPECT_NEAR(total, 100.0, 1e-9);
  // Two shapes of aten::mm: two groups; no arch → no bound, the model still there.
  ASSERT_EQ(tables.simple_summary.rows.size(), 2u);
  EXPECT_EQ(report::format_cell(tables.simple_summary.rows[0][14]), "");
  EXPECT_EQ(report::format_cell(tables.simple_summary.rows[0][17]), "True");
  EXPECT_EQ(report::format_cell(tables.simple_summary.rows[0][2]).substr(0, 4), "B=1,");
}

TEST(GraphCaptureAlignment, ReplayedKernelsGetCaptureOps) {
  // Capture: aten::mm launches k_a, aten::add launches k_b (HIP runtime events carry args.kernel).
  trace::Trace cap = parse(R"({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10,"args":{"External id":1,"Input Dims":[[8,16],[16,32]],"Input type":["float","float"]}},
    {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"External id":1,"correlation":5,"kernel":"k_a"}},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":20,"dur":10,"args":{"External id":2,"Input Dims":[[8,32],[8,32],[]],"Input type":["float","float","Scalar"]}},
    {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":1,"tid":1,"ts":21,"dur":1,"args":{"External id":2,"correlation":6,"kernel":"k_b"}}]})");
  trace::Trace rep = parse(R"({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"hipGraphLaunch","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":9}},
    {"ph":"X","cat":"kernel","name":"k_a","pid":0,"tid":0,"ts":10,"dur":4,"args":{"device":0,"stream":0,"correlation":9}},
    {"ph":"X","cat":"kernel","name":"k_b","pid":0,"tid":0,"ts":15,"dur":2,"args":{"device":0,"stream":0,"correlation":9}},
    {"ph":"X","cat":"kernel","name":"k_c","pid":0,"tid":0,"ts":18,"dur":2,"args":{"device":0,"stream":0,"correlation":9}}]})");
  std::vector<CaptureTrace> caps;
  caps.push_back({std::move(cap), {}});
  caps[0].links = trace::link_trace(caps[0].trace);
  auto links = trace::link_trace(rep);
  GraphAlignment g = align_graph_capture(rep, links, caps);
  EXPECT_EQ(g.graph_launches, 1u);
  EXPECT_EQ(g.graph_kernels, 3u);
  EXPECT_EQ(g.attributed, 2u);  // k_c was never captured
  std::vector<uint32_t> rows{1, 2, 3};
  StageAnalysis a = analyze_stage({{&rep, &links, &caps, &g}, rows, nullptr, nullptr});
  EXPECT_EQ(a.graph_events, 3u);
  EXPECT_EQ(a.graph_events_attributed, 2u);
  std::map<std::string, std::string> cat;
  for (const auto& c : a.calls) cat[c.name] = c.category;
  EXPECT_EQ(cat["aten::mm"], "GEMM");
  EXPECT_EQ(cat["aten::add"], "BinaryElementwise");
  EXPECT_EQ(cat["hipGraphLaunch"], "graph_replay");  // the unmatched kernel keeps the launch
}

TEST(TraceLensReport, WritesManifestAndCompactCsv) {
  const auto dir = std::filesystem::temp_directory_path() / "magpie_tracelens_unit";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto trace_path = dir / "trace.json";
  std::ofstream(trace_path) << llama_like();
  TraceLensOptions o;
  o.trace = trace_path;
  o.output_dir = dir / "out";
  o.isl = 1024;
  o.conc = 4;
  TraceLensResult r = run_tracelens(o);
  EXPECT_EQ(r.mode, "inference");
  ASSERT_TRUE(r.gpu_arch_platform.has_value());
  EXPECT_EQ(*r.gpu_arch_platform, "H200");
  auto stage = [&](Stage s) -> const TraceLensStageResult* {
    for (const auto& sr : r.stage_results)
      if (sr.stage == s) return &sr;
    return nullptr;
  };
  ASSERT_NE(stage(Stage::kDecode), nullptr);
  EXPECT_NE(stage(Stage::kPrefill), nullptr);
  EXPECT_EQ(stage(Stage::kPrefillDecode), nullptr);
  const auto simple =
      dir / "out/tracelens/decode_only_ISL1024_OSLunknown_CONC4_kernel_roofline_simple.csv";
  EXPECT_TRUE(std::filesystem::exists(simple));
  EXPECT_EQ(stage(Stage::kDecode)->simple_summary_file, simple.string());
  EXPECT_TRUE(std::filesystem::exists(dir / "out/tracelens/decode_only/GEMM.csv"));
  EXPECT_EQ(stage(Stage::kDecode)->pick.num_gpu_events, 1u);
  // The manifest on disk is the writer's rendering of the same result, in
  // Magpie's tracelens_analysis shape.
  ASSERT_TRUE(std::filesystem::exists(dir / "out/tracelens/tracelens_manifest.json"));
  const auto m = nlohmann::json::parse(std::ifstream(dir / "out/tracelens/tracelens_manifest.json"));
  EXPECT_EQ(m, tracelens_manifest_json(r));
  EXPECT_EQ(m["analysis_mode"], "inference");
  EXPECT_EQ(m["gpu_arch_platform"], "H200");
  EXPECT_TRUE(m["stage_results"].contains("decode"));
  EXPECT_FALSE(m["stage_results"].contains("prefilldecode"));
  EXPECT_EQ(m["stage_results"]["decode"]["simple_summary_file"], simple.string());
  EXPECT_EQ(m["phase_picks"]["decode"]["num_gpu_events"], 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magpie::analysis
