// The benchmark report writer: a BenchmarkReport built from request records
// (through the same compute_metrics the runner uses) → benchmark_report.json
// with Magpie's keys and summary.txt; and the store's two readings of a run
// (the typed report while recording, the JSON file on import) agree.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpu/gpu_run_json.hpp"
#include "jobs/serve_jobs.hpp"
#include "serve/benchmark_report_writer.hpp"
#include "store/workspace_import.hpp"

namespace magpie::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

RequestRecord ok(double start, double ttft, std::vector<double> itl, int64_t out, int64_t in) {
  RequestRecord r;
  r.success = true;
  r.start_s = start;
  r.ttft = ttft;
  r.itl = std::move(itl);
  r.latency = ttft;
  for (double x : r.itl) r.latency += x;
  r.output_tokens = out;
  r.prompt_len = in;
  return r;
}

CaseReport a_case(const std::string& label, int64_t conc, double ttft_s) {
  std::vector<RequestRecord> rs{ok(0.0, ttft_s, {0.02, 0.02, 0.02}, 4, 10),
                                ok(0.5, ttft_s * 3, {0.04}, 2, 20)};
  MetricsInput in;
  in.records = &rs;
  in.duration_s = 2.0;
  CaseReport c;
  c.label = label;
  c.concurrency = conc;
  c.input_len = 10;
  c.output_len = 4;
  c.num_prompts = 2;
  c.complete = true;
  c.metrics = compute_metrics(in);
  c.client.read_to_record = metric_stats({0.001, 0.003}, {50, 99});
  c.client.connections_opened = 2;
  c.raw_result_path = "/ws/" + label + "/benchmark_serving_result.json";
  c.requests_path = "/ws/" + label + "/requests.jsonl";
  return c;
}

BenchmarkReport a_report() {
  BenchmarkReport r;
  r.framework = "vllm";
  r.model = "tiny";
  r.timestamp = "2026-12-03T11:00:00";
  r.workspace_dir = "/ws";
  r.config.precision = "fp8";
  r.config.run_mode = "endpoint";
  r.config.num_cases = 2;
  r.config.timeout_seconds = 3600;
  r.server = ServerInfo{"endpoint", "http://127.0.0.1:9", {}, "", "", "", "", "unknown", "tiny"};
  r.cases = {a_case("CONC1_ISL10_OSL4", 1, 0.1), a_case("CONC4_ISL10_OSL4", 4, 0.2)};
  r.status = RunStatus::kSuccess;
  r.success = r.complete = r.reward_eligible = true;
  r.execution_time_s = 3.5;
  return r;
}

TEST(BenchmarkReportWriter, EveryMagpieKeyIsPresent) {
  BenchmarkReport empty;  // a run that failed before anything was measured
  json j = report_json(empty);
  for (const char* key :
       {"success", "framework", "model", "throughput", "latency", "kernel_summary",
        "top_bottlenecks", "tracelens_analysis", "gap_analysis", "gpu_monitor", "workspace_dir",
        "execution_time", "profiling_enabled", "run_kind", "reward_eligible", "errors"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["throughput"].is_null());
  EXPECT_TRUE(j["gpu_monitor"].is_null());  // not asked for
  EXPECT_EQ(j["status"], "failed");
  EXPECT_FALSE(j.contains("raw_result"));
  EXPECT_FALSE(j.contains("server"));
}

TEST(BenchmarkReportWriter, TopLevelBlocksAreTheFirstCase) {
  auto r = a_report();
  json j = report_json(r);
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["throughput"], j["cases"][0]["throughput"]);
  EXPECT_EQ(j["latency"], j["cases"][0]["latency"]);
  const auto& t = j["throughput"];
  EXPECT_EQ(t["completed_requests"], 2);
  EXPECT_EQ(t["total_input_tokens"], 30);
  EXPECT_EQ(t["total_output_tokens"], 6);
  EXPECT_DOUBLE_EQ(t["request_throughput"].get<double>(), 1.0);
  EXPECT_TRUE(t["request_goodput"].is_null());
  // TTFT 100 and 300 ms: mean 200, median 200, p99 by linear interpolation 298.
  const auto& ttft = j["latency"]["ttft"];
  EXPECT_NEAR(ttft["mean_ms"].get<double>(), 200.0, 1e-9);
  EXPECT_NEAR(ttft["p99_ms"].get<double>(), 298.0, 1e-9);
  EXPECT_NEAR(ttft["p50_ms"].get<double>(), 200.0, 1e-9);
  EXPECT_NEAR(ttft["std_ms"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(j["raw_result"]["completed"], 2);
  EXPECT_FALSE(
      j["raw_result"].contains("ttfts"));  // per-request arrays live in the case's own file
  const auto& c1 = j["cases"][1];
  EXPECT_EQ(c1["label"], "CONC4_ISL10_OSL4");
  EXPECT_EQ(c1["request_rate"], "inf");
  EXPECT_EQ(c1["client"]["connections_opened"], 2);
  EXPECT_NEAR(c1["client"]["read_to_record_ms"]["p50"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(j["server"]["served_model"], "tiny");
  EXPECT_FALSE(j["server"].contains("command"));  // endpoint mode: nothing launched
  EXPECT_EQ(j["config"]["run_mode"], "endpoint");
  EXPECT_EQ(j["status"], "success");
}

TEST(BenchmarkReportWriter, SummaryHasMagpieLinesAndTheSweep) {
  auto text = summary_text(a_report());
  for (const char* line :
       {"Benchmark Result: VLLM\n", "Model: tiny\n", "Status: SUCCESS\n",
        "  Completed requests: 2\n", "  TTFT (mean/p99): 200.00 ms / 298.00 ms\n", "Sweep:\n",
        "  CONC4_ISL10_OSL4: 1.00 req/s", "Workspace: /ws\n", "Execution time: 3.50s\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(BenchmarkReportWriter, TimeoutAndIncompleteAreSaid) {
  auto r = a_report();
  r.success = r.complete = false;
  r.status = RunStatus::kTimeout;
  r.errors = {"timeout: the run passed timeout_seconds (5 s) during case CONC4_ISL10_OSL4"};
  EXPECT_NE(summary_text(r).find("Status: FAILED (TIMEOUT, INCOMPLETE)\n"), std::string::npos);
  EXPECT_EQ(report_json(r)["status"], "timeout");
  r.status = RunStatus::kIncomplete;
  EXPECT_NE(summary_text(r).find("Status: FAILED (INCOMPLETE)\n"), std::string::npos);
}

TEST(BenchmarkReportWriter, GpuMonitorBlock) {
  auto r = a_report();
  GpuMonitorSummary none;
  none.reason = "NVML not found (libnvidia-ml.so.1)";
  r.gpu_monitor = none;
  json j = report_json(r)["gpu_monitor"];
  EXPECT_EQ(j["available"], false);
  EXPECT_EQ(j["reason"], none.reason);
  EXPECT_NE(summary_text(r).find("unavailable: NVML not found"), std::string::npos);

  GpuMonitorSummary s;
  s.available = true;
  s.interval_s = 0.5;
  s.samples = 3;
  s.csv_path = "/ws/gpu_monitor.csv";
  GpuFieldSummary g;
  g.index = 1;
  g.name = "NVIDIA H200";
  g.samples = 3;
  g.fields["sm_clock_mhz"] = {3, 345, 1000, 1980};
  s.gpus.push_back(g);
  r.gpu_monitor = s;
  j = report_json(r)["gpu_monitor"];
  EXPECT_EQ(j["available"], true);
  EXPECT_EQ(j["interval_sec"], 0.5);
  EXPECT_EQ(j["csv_path"], "/ws/gpu_monitor.csv");
  EXPECT_EQ(j["gpus"][0]["index"], 1);
  EXPECT_EQ(j["gpus"][0]["fields"]["sm_clock_mhz"]["max"], 1980);
  EXPECT_FALSE(j["gpus"][0]["fields"].contains("power_w"));  // not reported, not zero
  EXPECT_NE(summary_text(r).find("GPU 1 (min/mean/max): utilization_pct n/a"), std::string::npos);
}

// A monitor summary of two GPUs measured over two sweep cases: GPU 0 power-capped
// in 2 of its 4 samples while measuring, GPU 1 never throttled.
GpuMonitorSummary a_throttled_run() {
  std::vector<GpuSampleRow> rows;
  auto at = [&rows](double t, int gpu, uint64_t reasons) {
    GpuSampleRow r;
    r.t_s = t;
    r.sample.index = gpu;
    r.sample.sm_clock_mhz = reasons & gpu::kThrottleReasonMask ? 1400 : 1980;
    r.sample.clocks_event_reasons = reasons;
    rows.push_back(r);
  };
  for (int gpu : {0, 1}) {
    at(0.0, gpu, 0x1);                   // before: idle
    at(1.0, gpu, gpu == 0 ? 0x4 : 0x0);  // case 1
    at(2.0, gpu, 0x0);
    at(3.0, gpu, gpu == 0 ? 0x4 : 0x0);  // case 2's warm-up: outside the spans
    at(4.0, gpu, gpu == 0 ? 0x4 : 0x0);  // case 2
    at(5.0, gpu, 0x0);
  }
  const std::vector<std::pair<int, std::string>> names{{0, "NVIDIA H200"}, {1, "NVIDIA H200"}};
  GpuMonitorSummary s;
  s.available = true;
  s.interval_s = 1.0;
  s.samples = 6;
  s.csv_path = "/ws/gpu_monitor.csv";
  s.gpus = gpu::summarize_gpu_samples(rows, names);
  s.throttle = gpu::find_throttling(rows, names, {{1.0, 2.0}, {4.0, 5.0}});
  s.throttle.marked = true;
  return s;
}

TEST(BenchmarkReportWriter, GpuMonitorThrottleBlockIsTheKernelReportsBlock) {
  auto r = a_report();
  r.gpu_monitor = a_throttled_run();
  json j = report_json(r)["gpu_monitor"];
  // One writer for analyze, compare and benchmark reports.
  EXPECT_EQ(j, gpu::monitor_summary_json(*r.gpu_monitor));
  const json& t = j.at("throttle");
  EXPECT_EQ(t["window"], "measuring");
  EXPECT_EQ(t["from_s"], 1.0);
  EXPECT_EQ(t["to_s"], 5.0);
  EXPECT_EQ(t["spans"], json::parse("[[1.0, 2.0], [4.0, 5.0]]"));
  EXPECT_EQ(t["reasons_reported"], true);
  EXPECT_EQ(t["throttled"], true);
  ASSERT_EQ(t["gpus"].size(), 2u);
  EXPECT_EQ(t["gpus"][0]["index"], 0);
  EXPECT_EQ(t["gpus"][0]["samples"], 4);
  EXPECT_EQ(t["gpus"][0]["throttled_samples"], 2);  // 3.0 is between the spans
  EXPECT_EQ(t["gpus"][0]["reasons"], json({{"sw_power_cap", 2}}));
  EXPECT_EQ(t["gpus"][1]["samples"], 4);
  EXPECT_EQ(t["gpus"][1]["throttled_samples"], 0);
  EXPECT_EQ(t["gpus"][1]["reasons"], json::object());
  ASSERT_EQ(t["warnings"].size(), 1u);
  EXPECT_EQ(t["warnings"][0].get<std::string>().rfind(
                "GPU 0 (NVIDIA H200): clocks lowered in 2 of 4 samples while measuring "
                "(sw_power_cap 2)",
                0),
            0u)
      << t["warnings"][0];
  auto text = summary_text(r);
  EXPECT_NE(
      text.find(
          "  Throttling while measuring (1.0-5.0 s, 2 spans):\n    GPU 0 (NVIDIA H200): clocks "
          "lowered in 2 of 4 samples while measuring (sw_power_cap 2)"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("GPU 1 (NVIDIA H200): clocks lowered"), std::string::npos) << text;
}

TEST(BenchmarkReportWriter, GpuMonitorWithoutThrottlingOrWithoutReasonsSaysSo) {
  auto r = a_report();
  auto s = a_throttled_run();
  s.throttle.gpus.erase(s.throttle.gpus.begin());  // only the GPU that kept its clocks
  r.gpu_monitor = s;
  json t = report_json(r)["gpu_monitor"]["throttle"];
  EXPECT_EQ(t["throttled"], false);
  EXPECT_TRUE(t["warnings"].empty());
  EXPECT_NE(summary_text(r).find("  Throttling while measuring (1.0-5.0 s, 2 spans): none\n"),
            std::string::npos)
      << summary_text(r);

  // A driver without nvmlDeviceGetCurrentClocksEventReasons: no verdict either way.
  std::vector<GpuSampleRow> rows(3);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].t_s = static_cast<double>(i);
  s.throttle = gpu::find_throttling(rows, {{0, "NVIDIA H200"}}, {{0.0, 2.0}});
  s.throttle.marked = true;
  r.gpu_monitor = s;
  t = report_json(r)["gpu_monitor"]["throttle"];
  EXPECT_EQ(t["reasons_reported"], false);
  EXPECT_EQ(t["throttled"], false);
  EXPECT_NE(summary_text(r).find(
                "  note: the driver reports no clocks event reasons; throttling was not checked\n"),
            std::string::npos)
      << summary_text(r);
}

// A search's first case is only its lowest probe: the top-level figures, and so the results
// store's headline metrics (live and imported), are the knee's first run; with no passing probe,
// the first case's.
TEST(BenchmarkReportWriter, ASearchsHeadlineFiguresAreTheKneesRun) {
  BenchmarkReport r = a_report();
  r.cases = {a_case("CONC1_ISL10_OSL4_run1", 1, 0.1), a_case("CONC2_ISL10_OSL4_run1", 2, 0.2),
             a_case("CONC4_ISL10_OSL4_run1", 4, 0.9)};
  SloSearchResult ss;
  ss.settings.variable = SearchVariable::kConcurrency;
  for (auto [value, verdict] : {std::pair{1.0, ProbeVerdict::kPass}, {2.0, ProbeVerdict::kPass},
                                {4.0, ProbeVerdict::kFail}}) {
    SearchProbe p;
    p.value = value;
    p.verdict = verdict;
    p.runs.push_back({});
    p.runs.back().case_label = fmt::format("CONC{:g}_ISL10_OSL4_run1", value);
    ss.probes.push_back(p);
  }
  ss.highest_pass = 2;
  ss.lowest_fail = 4;
  ss.status = SearchStatus::kFound;
  r.slo_search = ss;
  json j = report_json(r);
  EXPECT_EQ(j["slo_search"]["headline_case"], "CONC2_ISL10_OSL4_run1");
  EXPECT_EQ(j["throughput"], j["cases"][1]["throughput"]);
  EXPECT_EQ(j["latency"], j["cases"][1]["latency"]);
  auto live = jobs::headline_metrics(r);
  EXPECT_DOUBLE_EQ(live["ttft.mean_ms"], 400.0);  // TTFTs 200 and 600 ms
  auto imported = store::metrics_from_report(store::RunKind::kBenchmark, j);
  for (const auto& [name, value] : imported) EXPECT_DOUBLE_EQ(live[name], value) << name;
  EXPECT_NE(summary_text(r).find("Throughput (the knee's run, CONC2_ISL10_OSL4_run1):"), std::string::npos);

  r.slo_search->highest_pass.reset();  // none passed: the first case, as without a search
  r.slo_search->status = SearchStatus::kNonePass;
  j = report_json(r);
  EXPECT_EQ(j["slo_search"]["headline_case"], "CONC1_ISL10_OSL4_run1");
  EXPECT_EQ(j["throughput"], j["cases"][0]["throughput"]);
  EXPECT_DOUBLE_EQ(jobs::headline_metrics(r)["ttft.mean_ms"], 200.0);
}

TEST(BenchmarkReportWriter, StoreReadsTheSameFiguresFromTypesAndFromTheFile) {
  auto r = a_report();
  auto dir = fs::temp_directory_path() / "magpie_report_writer_test";
  fs::create_directories(dir);
  write_report_files(r, dir);
  std::ifstream in(dir / "benchmark_report.json");
  std::stringstream buf;
  buf << in.rdbuf();
  json written = json::parse(buf.str());
  EXPECT_EQ(written, report_json(r));
  auto from_file = store::metrics_from_report(store::RunKind::kBenchmark, written);
  auto from_types = jobs::headline_metrics(r);
  EXPECT_EQ(from_types.size(), from_file.size());
  for (const auto& [name, value] : from_file) {
    ASSERT_TRUE(from_types.count(name)) << name;
    EXPECT_DOUBLE_EQ(from_types[name], value) << name;
  }
  std::ifstream summary(dir / "summary.txt");
  std::stringstream text;
  text << summary.rdbuf();
  EXPECT_EQ(text.str(), summary_text(r));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace magpie::serve
