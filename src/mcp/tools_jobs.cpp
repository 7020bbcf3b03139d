// The long tools: one typed job each from src/jobs (gap analysis, TraceLens,
// kernel evaluation, serving benchmark). Arguments map onto the job's
// request, the call's progress and cancel flag onto its JobContext; the job
// records the run in the results store like the CLI does.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "analysis/step_annotation.hpp"
#include "core/error.hpp"
#include "jobs/kernel_jobs.hpp"
#include "jobs/serve_jobs.hpp"
#include "jobs/trace_jobs.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/benchmark_report_writer.hpp"

namespace magpie::mcp::detail {

using nlohmann::json;
namespace fs = std::filesystem;
namespace s = schema;

namespace {

jobs::JobContext job_context(const ToolCall& call) {
  jobs::JobContext c;
  c.face = "mcp";
  c.command_line = call.command_line;
  c.cancel = call.cancel;
  c.progress = [progress = call.progress](const jobs::Progress& p) {
    progress({p.done, p.total, p.message});
  };
  return c;
}

void throw_if_cancelled(const ToolCall& call) {
  if (call.cancelled()) throw Error(ErrorKind::kCancelled, "cancelled by the client");
}

std::vector<std::string> strings(const ToolCall& call, const char* name) {
  return arg<std::vector<std::string>>(call, name, {});
}

json percent(const std::string& description) {
  json p = s::number(description, 0);
  p["maximum"] = 100;
  return p;
}

json paths_json(const std::vector<fs::path>& paths) {
  json out = json::array();
  for (const auto& p : paths) out.push_back(p.string());
  return out;
}

// The parameters analyze and compare share (Magpie's names).
void add_kernel_params(json& props, bool compare) {
  props["kernel_type"] = s::with_default(
      s::one_of("Implementation language", {"hip", "cuda", "triton", "pytorch"}), "hip");
  props["working_dir"] = s::string("Folder commands run in (default: each kernel file's folder)");
  props["compile_command"] = s::string("Build command, e.g. 'hipcc -O3 kernel.hip -o kernel'");
  props["check_performance"] =
      s::with_default(s::boolean("Time the kernels (false: correctness only)"), true);
  props["check_latency"] =
      s::with_default(s::boolean("Also time per-call latency through the harness"), true);
  props["kernel_config"] =
      s::path("A kernel YAML (from create_kernel_config) instead of file arguments");
  props["rounds"] = s::integer("Exactly this many performance rounds (default: the YAML's; else compare adapts, 3 to 10 until every verdict is settled, analyze 5)", 1);
  props["output_dir"] = s::with_default(s::path("Workspaces go under this folder"), "./results");
  props["environment"] =
      s::with_default(s::one_of("Where to run (local only here)", {"local"}), "local");
  if (compare) {
    props["baseline_index"] = s::with_default(s::integer("Which kernel is the baseline", 0), 0);
    props["fail_on_regression"] =
        s::with_default(s::boolean("Report an error when a candidate is SLOWER"), false);
  }
}

json kernel_output_schema() {
  return s::object({{"workspace", s::string("")},
                    {"report_path", s::string("analyze_report.json / compare_report.json")},
                    {"all_correct", s::boolean("")},
                    {"regression", s::boolean("a candidate is SLOWER than the baseline")},
                    {"run_id", s::integer("results-store row")},
                    {"warnings", s::array(s::string(""), "")},
                    {"report", s::any_object("the report, as written")}},
                   {"workspace", "all_correct", "run_id", "report"});
}

ToolOutput kernel_job(const ToolCall& call, bool compare) {
  jobs::KernelEvaluationRequest r;
  r.compare = compare;
  if (compare) {
    r.sources.files = strings(call, "kernel_paths");
    r.sources.testcases = strings(call, "testcase_commands");
    r.baseline = static_cast<size_t>(arg<int64_t>(call, "baseline_index", 0));
    r.fail_on_regression = arg<bool>(call, "fail_on_regression", false);
  } else {
    if (has_arg(call, "kernel_path")) r.sources.files = {arg<std::string>(call, "kernel_path", "")};
    if (has_arg(call, "testcase_command"))
      r.sources.testcases = {arg<std::string>(call, "testcase_command", "")};
  }
  r.sources.kernel_config = arg<std::string>(call, "kernel_config", "");
  r.sources.type = arg<std::string>(call, "kernel_type", "hip");
  r.sources.compile_command = arg<std::string>(call, "compile_command", "");
  r.sources.working_dir = arg<std::string>(call, "working_dir", "");
  r.overrides.rounds = static_cast<int>(arg<int64_t>(call, "rounds", 0));
  r.check_performance = arg<bool>(call, "check_performance", true);
  r.check_latency = arg<bool>(call, "check_latency", true);
  if (!r.check_performance) r.overrides.latency_method = "none";
  r.output_dir = arg<std::string>(call, "output_dir", "./results");
  jobs::KernelEvaluationOutcome o = jobs::evaluate_kernels(r, job_context(call));
  throw_if_cancelled(call);
  json out = {{"workspace", o.workspace.string()},
              {"report_path", o.report_path.string()},
              {"all_correct", o.all_correct},
              {"regression", o.regression},
              {"run_id", o.run_id},
              {"warnings", o.warnings},
              {"report", jobs::report_json(o)}};
  std::string text = jobs::console_text(o);
  std::string errors = jobs::error_text(o);
  if (!errors.empty()) text += "\n" + errors;
  return ToolOutput{out, text};
}

}  // namespace

Tool gap_analysis_tool() {
  Tool t;
  t.name = "gap_analysis";
  t.title = "Gap analysis of profiler traces";
  t.description =
      "Where GPU time goes in PyTorch profiler (Kineto) or rocprof traces: the top kernels by "
      "total time with calls, median, share and launching op, merged over rank files. Reads "
      "trace_dir (a folder of .json/.json.gz traces, one per rank) and writes "
      "gap_analysis.csv/json under output_dir/gap_analysis. Reports progress per file.";
  t.long_running = true;
  t.input_schema = s::input(
      {{"trace_dir", s::path("Folder of trace files, one per rank (or DIR/torch_trace)")},
       {"start_pct", s::with_default(percent("Analyse from this % of the trace's span"), 0)},
       {"end_pct", s::with_default(percent("... up to this %"), 100)},
       {"top_k", s::with_default(s::integer("Kernels in the top list", 1), 20)},
       {"min_duration_us", s::with_default(s::number("Ignore kernels shorter than this", 0), 0)},
       {"categories", s::array(s::string(""), "Event categories counted (default kernel, gpu)")},
       {"ignore_categories",
        s::array(s::string(""),
                 "Categories ignored (default gpu_user_annotation, user_annotation)")},
       {"find_kernel_sources", s::with_default(s::boolean("Map kernels to source files"), false)},
       {"kernel_source_repos", s::array(s::path(""), "Repositories searched for kernel sources")},
       {"output_dir",
        s::with_default(s::path("Reports go to output_dir/gap_analysis"), "./results")}},
      {"trace_dir"});
  t.output_schema =
      s::object({{"run_id", s::integer("results-store row (0 when not recorded)")},
                 {"output_dir", s::string("")},
                 {"files", s::object({{"csv", s::string("")},
                                      {"json", s::string("")},
                                      {"rank_csvs", s::array(s::string(""), "")}},
                                     {"csv", "json"})},
                 {"seconds", s::number("")},
                 {"warnings", s::array(s::string(""), "")},
                 {"report", s::any_object("gap_analysis.json: config, totals, top kernels")}},
                {"run_id", "files", "report"});
  t.handler = [](const ToolCall& call) {
    jobs::GapAnalysisRequest r;
    r.trace_dir = arg<std::string>(call, "trace_dir", "");
    r.config.start_pct = arg<double>(call, "start_pct", 0);
    r.config.end_pct = arg<double>(call, "end_pct", 100);
    r.config.top_k = static_cast<size_t>(arg<int64_t>(call, "top_k", 20));
    r.config.min_duration_us = arg<double>(call, "min_duration_us", 0);
    if (has_arg(call, "categories")) r.config.categories = strings(call, "categories");
    if (has_arg(call, "ignore_categories"))
      r.config.ignore_categories = strings(call, "ignore_categories");
    r.sources.enabled = arg<bool>(call, "find_kernel_sources", false);
    for (const auto& repo : strings(call, "kernel_source_repos"))
      r.sources.repos.emplace_back(repo);
    r.output_dir = arg<std::string>(call, "output_dir", "./results");
    if (r.config.end_pct <= r.config.start_pct)
      throw Error(ErrorKind::kUsage, "end_pct must be greater than start_pct", {}, std::nullopt,
                  "e.g. start_pct 10, end_pct 90 for the middle 80% of the trace");
    jobs::GapAnalysisOutcome o = jobs::run_gap_analysis(r, job_context(call));
    throw_if_cancelled(call);
    json out = {{"run_id", o.run_id},
                {"output_dir", o.files.output_dir.string()},
                {"files",
                 {{"csv", o.files.csv.string()},
                  {"json", o.files.json.string()},
                  {"rank_csvs", paths_json(o.files.rank_csvs)}}},
                {"seconds", o.seconds},
                {"warnings", jobs::warnings(o)},
                {"report", jobs::report_json(o)}};
    return ToolOutput{out, jobs::console_text(o)};
  };
  return t;
}

Tool tracelens_tool() {
  Tool t;
  t.name = "tracelens";
  t.title = "TraceLens stage reports with roofline";
  t.description =
      "TraceLens-style reports from one PyTorch profiler trace (or a folder of rank traces): per "
      "inference stage (prefilldecode, decode, prefill) the ops and kernels that dominate, their "
      "FLOPs and bytes, and where they sit on the GPU's roofline. Writes CSV (and optionally "
      "Excel) under output_dir/tracelens and returns the manifest.";
  t.long_running = true;
  t.input_schema = s::input(
      {{"trace", s::path("Trace file (.json/.json.gz), or a folder of rank traces")},
       {"mode",
        s::with_default(s::one_of("inference: split into stages; pytorch: whole trace per rank",
                                  {"inference", "pytorch"}),
                        "inference")},
       {"stages",
        s::array(s::one_of("", {"prefilldecode", "decode", "prefill"}), "Stages (default all)")},
       {"export_format", s::with_default(s::one_of("", {"csv", "excel", "both"}), "csv")},
       {"gpu_arch", s::string("GPU for the roofline (H200, MI300X, ...), instead of the trace's")},
       {"capture_dir", s::path("Graph-capture traces of the same run (vLLM capture_traces/)")},
       {"isl", s::integer("Input length (names the summary CSV)", 0)},
       {"osl", s::integer("Output length (names the summary CSV)", 0)},
       {"conc", s::integer("Concurrency (names the summary CSV)", 0)},
       {"output_dir", s::with_default(s::path("Reports go to output_dir/tracelens"), "./results")}},
      {"trace"});
  t.output_schema = s::object({{"run_id", s::integer("results-store row (0 when not recorded)")},
                               {"errors", s::array(s::string(""), "")},
                               {"warnings", s::array(s::string(""), "")},
                               {"manifest", s::any_object("tracelens_manifest.json")}},
                              {"run_id", "manifest"});
  t.handler = [](const ToolCall& call) {
    analysis::TraceLensOptions o;
    o.trace = arg<std::string>(call, "trace", "");
    o.mode = arg<std::string>(call, "mode", "inference");
    for (const auto& name : strings(call, "stages")) {
      auto st = analysis::parse_stage(name);
      if (st && std::find(o.stages.begin(), o.stages.end(), *st) == o.stages.end())
        o.stages.push_back(*st);
    }
    std::string fmt = arg<std::string>(call, "export_format", "csv");
    o.write_csv = fmt != "excel";
    o.write_excel = fmt != "csv";
    o.gpu_arch = arg<std::string>(call, "gpu_arch", "");
    o.capture_dir = arg<std::string>(call, "capture_dir", "");
    if (has_arg(call, "isl")) o.isl = arg<int64_t>(call, "isl", 0);
    if (has_arg(call, "osl")) o.osl = arg<int64_t>(call, "osl", 0);
    if (has_arg(call, "conc")) o.conc = arg<int64_t>(call, "conc", 0);
    o.output_dir = arg<std::string>(call, "output_dir", "./results");
    jobs::TraceLensOutcome out = jobs::run_tracelens(o, job_context(call));
    throw_if_cancelled(call);
    if (!out.result.errors.empty() && out.result.stage_results.empty()) {
      std::string all;
      for (const auto& e : out.result.errors) all += (all.empty() ? "" : "; ") + e;
      throw Error(ErrorKind::kBadFormat, "no report could be made: " + all);
    }
    json j = {{"run_id", out.run_id},
              {"errors", out.result.errors},
              {"warnings", out.result.warnings},
              {"manifest", jobs::report_json(out)}};
    return ToolOutput{j, jobs::console_text(out)};
  };
  return t;
}

Tool analyze_tool() {
  Tool t;
  t.name = "analyze";
  t.title = "Analyze a GPU kernel";
  t.description =
      "Builds a kernel, runs its testcase (correctness gate: finiteness, input immutability, "
      "agreement with a reference when given) and times it (CUPTI/ncu rounds, harness latency). "
      "Give kernel_path + testcase_command (+ compile_command), or a kernel_config YAML "
      "(create_kernel_config drafts one). check_performance=false checks correctness only, and "
      "runs without a GPU for pytorch kernels on CPU tensors.";
  t.long_running = true;
  json props = {
      {"kernel_path", s::path("The kernel source file")},
      {"testcase_command", s::string("Command that runs and checks the kernel, e.g. './test'")}};
  add_kernel_params(props, false);
  t.input_schema = {{"type", "object"},
                    {"properties", props},
                    {"additionalProperties", false},
                    {"anyOf", json::array({{{"required", {"kernel_path", "testcase_command"}}},
                                           {{"required", {"kernel_config"}}}})}};
  t.output_schema = kernel_output_schema();
  t.handler = [](const ToolCall& call) { return kernel_job(call, false); };
  return t;
}

Tool compare_tool() {
  Tool t;
  t.name = "compare";
  t.title = "Compare GPU kernel implementations";
  t.description =
      "Evaluates two or more implementations of one kernel (interleaved rounds) and ranks them "
      "against the baseline with bootstrap verdicts FASTER/SLOWER/SAME/AMBIGUOUS. One testcase "
      "command for all, or one per kernel; or a kernel_config YAML listing them.";
  t.long_running = true;
  json props = {
      {"kernel_paths", s::array(s::path(""), "Kernel source files, baseline among them", 2)},
      {"testcase_commands", s::array(s::string(""), "One command for all, or one per kernel", 1)}};
  add_kernel_params(props, true);
  t.input_schema = {{"type", "object"},
                    {"properties", props},
                    {"additionalProperties", false},
                    {"anyOf", json::array({{{"required", {"kernel_paths", "testcase_commands"}}},
                                           {{"required", {"kernel_config"}}}})}};
  t.output_schema = kernel_output_schema();
  t.handler = [](const ToolCall& call) { return kernel_job(call, true); };
  return t;
}

void add_load_shape_params(json& input_schema) {
  auto& props = input_schema["properties"];
  props["slo"] = s::string(
      "Goodput SLOs (client.slo), e.g. \"ttft_p99<=2s,tpot_p50<=50ms\": METRIC ttft|tpot|itl|e2el, "
      "STAT pNN|median|mean, LIMIT in ms, s or us");
  props["search"] = s::object(
      {{"variable", s::with_default(s::one_of("What the search raises", {"request_rate", "concurrency"}),
                                    "request_rate")},
       {"min", s::number("The range's low end (req/s or requests in flight)")},
       {"max", s::number("The range's high end")},
       {"step", s::number("The knee's resolution (default: min for a rate, 1 for a concurrency)")},
       {"repeats", s::integer("Runs per probe (default 2)", 1)},
       {"max_repeats", s::integer("A probe within noise gets more runs, up to this (default 4)", 1)},
       {"noise", s::number("Least run-to-run noise assumed (default 0.05)", 0)},
       {"max_probes", s::integer("Values probed at most (default 12)", 1)},
       {"max_time_s", s::number("No new probe after this long (default 0: none)", 0)}},
      {"min", "max"}, /*closed=*/true);
  props["search"]["description"] =
      "SLO search (client.search): the highest request rate or concurrency whose runs meet `slo`";
  props["rate_ramp"] = s::string(
      "Request-rate ramp (client.rate_ramp): linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N");
  props["concurrency_ramp"] = s::string(
      "Concurrency ramp (client.concurrency_ramp): linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N "
      "(requests in flight)");
}

void load_shape_flags(const ToolCall& call, serve::BenchmarkFlags& f) {
  if (has_arg(call, "slo")) f.slo = arg<std::string>(call, "slo", "");
  if (has_arg(call, "rate_ramp")) f.rate_ramp = arg<std::string>(call, "rate_ramp", "");
  if (has_arg(call, "concurrency_ramp")) f.concurrency_ramp = arg<std::string>(call, "concurrency_ramp", "");
  if (!has_arg(call, "search")) return;
  const json& se = call.arguments["search"];
  f.search = se.value("variable", "request_rate");
  f.search_range = fmt::format("{:g}:{:g}", se.at("min").get<double>(), se.at("max").get<double>());
  auto num = [&](const char* key, std::optional<double>& out) {
    if (se.contains(key)) out = se[key].get<double>();
  };
  auto integer = [&](const char* key, std::optional<int64_t>& out) {
    if (se.contains(key)) out = se[key].get<int64_t>();
  };
  num("step", f.search_step);
  num("noise", f.search_noise);
  num("max_time_s", f.search_max_time);
  integer("repeats", f.search_repeats);
  integer("max_repeats", f.search_max_repeats);
  integer("max_probes", f.search_max_probes);
}

void append_load_shape_args(const serve::BenchmarkFlags& f, std::vector<std::string>& args) {
  auto add = [&](const char* flag, const std::string& value) {
    args.push_back(flag);
    args.push_back(value);
  };
  auto add_num = [&](const char* flag, const auto& v) {
    if (v) add(flag, fmt::format("{}", *v));
  };
  if (f.slo) add("--slo", *f.slo);
  if (f.rate_ramp) add("--rate-ramp", *f.rate_ramp);
  if (f.concurrency_ramp) add("--concurrency-ramp", *f.concurrency_ramp);
  if (f.search) add("--search", *f.search);
  if (f.search_range) add("--search-range", *f.search_range);
  add_num("--search-step", f.search_step);
  add_num("--search-noise", f.search_noise);
  add_num("--search-max-time", f.search_max_time);
  add_num("--search-repeats", f.search_repeats);
  add_num("--search-max-repeats", f.search_max_repeats);
  add_num("--search-max-probes", f.search_max_probes);
}

Tool benchmark_tool() {
  Tool t;
  t.name = "benchmark";
  t.title = "Serving benchmark";
  t.description =
      "Benchmarks an LLM inference server (vLLM, SGLang, ATOM): launches it (docker or local) or "
      "uses a running endpoint, drives the workload (concurrency, input/output lengths), and "
      "reports throughput and TTFT/TPOT/ITL/E2EL percentiles; with torch_profiler, also a gap "
      "analysis (and TraceLens) of the profiled window. Progress is reported per phase; "
      "cancelling stops the engine's whole process group.";
  t.long_running = true;
  t.input_schema = s::input(
      {{"framework", s::one_of("Inference engine", {"vllm", "sglang", "atom"})},
       {"model", s::path("Model name or path")},
       {"precision", s::with_default(s::one_of("", {"fp8", "fp16", "bf16", "fp4", "mxfp4", "mxfp8", "w4a16"}), "fp8")},
       {"run_mode",
        s::with_default(s::one_of("docker, or local (engine on PATH)", {"docker", "local"}),
                        "docker")},
       {"tp", s::with_default(s::integer("Tensor parallelism", 1), 1)},
       {"concurrency", s::integer("Concurrent requests (default 32)", 1)},
       {"input_len", s::integer("Input tokens per request (default 1024)", 1)},
       {"output_len", s::integer("Output tokens per request (default 512)", 1)},
       {"num_prompts", s::integer("Requests (default concurrency x 10)", 1)},
       {"range_ratio", s::number("Input/output lengths vary by this fraction (default 0.5)", 0)},
       {"token_id_max",
        s::integer("Largest random prompt token id (default 30000; below the vocabulary)", 1)},
       {"warmups", s::integer("Warm-up requests (default 2 x concurrency)", 0)},
       {"torch_profiler",
        s::with_default(s::boolean("Profile with the torch profiler (diagnostic run)"), false)},
       {"tracelens",
        s::with_default(s::boolean("TraceLens reports of the profiled window"), false)},
       {"gap_analysis_enabled",
        s::with_default(s::boolean("Gap analysis of the traces (profiled runs)"), true)},
       {"gap_analysis_top_k", s::integer("Top kernels", 1)},
       {"gap_analysis_start_pct", percent("Gap analysis from this % of the profiled span")},
       {"gap_analysis_end_pct", percent("... up to this %")},
       {"docker_image", s::string("Image instead of Magpie's choice (list_benchmark_images)")},
       {"timeout_seconds", s::with_default(s::number("Whole-run timeout", 1), 3600)},
       {"ready_timeout_seconds", s::number("How long the engine may take to become ready", 1)},
       {"output_dir", s::with_default(s::path("Workspaces go under this folder"), "./results")},
       {"extra_envs",
        {{"type", "object"},
         {"additionalProperties", {{"type", "string"}}},
         {"description", "Environment for the engine and Magpie's envs (TP, MAX_MODEL_LEN, ...)"}}},
       {"endpoint",
        s::string("Benchmark this running server (http://host:port) instead of launching one")},
       {"engine_executable",
        s::path("Path to `vllm` (or python for sglang/atom) for run_mode local")},
       {"engine_args", s::array(s::string(""), "Extra engine arguments, appended")},
       {"cpu_engine",
        s::with_default(s::boolean("The engine runs on CPU (drops GPU-only flags)"), false)}},
      {"framework", "model"});
  add_ray_benchmark_params(t.input_schema);
  add_load_shape_params(t.input_schema);
  t.output_schema = s::object({{"success", s::boolean("")},
                               {"workspace", s::string("")},
                               {"run_id", s::integer("results-store row")},
                               {"report", s::any_object("benchmark_report.json")},
                               {"ray_task", s::any_object("run_mode ray: the Ray job (ray_task_status)")}},
                              {"success", "workspace", "run_id", "report"});
  t.handler = [](const ToolCall& call) {
    if (wants_ray(call)) return ray_benchmark(call);
    serve::BenchmarkFlags f;
    auto str = [&](const char* name, std::optional<std::string>& out) {
      if (has_arg(call, name)) out = arg<std::string>(call, name, "");
    };
    auto num = [&](const char* name, std::optional<std::string>& out) {
      if (has_arg(call, name)) out = std::to_string(arg<int64_t>(call, name, 0));
    };
    str("framework", f.framework);
    str("model", f.model);
    str("precision", f.precision);
    str("run_mode", f.run_mode);
    str("docker_image", f.docker_image);
    str("output_dir", f.output_dir);
    str("endpoint", f.endpoint);
    str("engine_executable", f.engine_executable);
    num("tp", f.tp);
    num("concurrency", f.concurrency);
    num("input_len", f.input_len);
    num("output_len", f.output_len);
    num("num_prompts", f.num_prompts);
    if (has_arg(call, "range_ratio"))
      f.range_ratio = fmt::format("{:g}", arg<double>(call, "range_ratio", 0.5));  // as the CLI echoes it
    if (has_arg(call, "token_id_max")) f.token_id_max = arg<int64_t>(call, "token_id_max", 30000);
    if (has_arg(call, "warmups")) f.warmups = arg<int64_t>(call, "warmups", 0);
    if (has_arg(call, "torch_profiler"))
      f.torch_profiler = arg<bool>(call, "torch_profiler", false);
    if (has_arg(call, "timeout_seconds")) f.timeout = arg<double>(call, "timeout_seconds", 3600);
    if (has_arg(call, "ready_timeout_seconds"))
      f.ready_timeout = arg<double>(call, "ready_timeout_seconds", 0);
    if (has_arg(call, "cpu_engine")) f.engine_gpu = !arg<bool>(call, "cpu_engine", false);
    f.extra_engine_args = strings(call, "engine_args");
    if (has_arg(call, "extra_envs"))
      for (const auto& [k, v] : call.arguments["extra_envs"].items())
        f.envs.push_back(k + "=" + v.get<std::string>());
    load_shape_flags(call, f);
    serve::BenchmarkConfig config;
    serve::apply_flags(config, f, /*from_yaml=*/false);
    config.tracelens = arg<bool>(call, "tracelens", false);
    config.gap.enabled = arg<bool>(call, "gap_analysis_enabled", true);
    if (has_arg(call, "gap_analysis_top_k"))
      config.gap.top_k = static_cast<size_t>(arg<int64_t>(call, "gap_analysis_top_k", 20));
    if (has_arg(call, "gap_analysis_start_pct"))
      config.gap.start_pct = arg<double>(call, "gap_analysis_start_pct", 0);
    if (has_arg(call, "gap_analysis_end_pct"))
      config.gap.end_pct = arg<double>(call, "gap_analysis_end_pct", 100);
    jobs::ServingBenchmarkOutcome o = jobs::run_serving_benchmark(config, job_context(call));
    throw_if_cancelled(call);
    json out = {{"success", o.success},
                {"workspace", o.workspace.string()},
                {"run_id", o.run_id},
                {"report", serve::report_json(o.report)}};
    std::string text = jobs::console_text(o);
    if (!o.success)
      throw Error(ErrorKind::kRejected, "the benchmark did not succeed; workspace " +
                                            o.workspace.string() +
                                            " has the report and server.log\n" + text);
    return ToolOutput{out, text};
  };
  return t;
}

}  // namespace magpie::mcp::detail
