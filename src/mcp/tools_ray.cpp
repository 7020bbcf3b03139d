// The Ray tools: status, result, cancel and list of the jobs Magpie runs on a
// Ray cluster, benchmark_batch, and the ray_* arguments of `benchmark`
// (src/jobs/ray_jobs.hpp does the work; docs/RAY.md).
#include <fmt/format.h>

#include <fstream>

#include "core/error.hpp"
#include "jobs/ray_jobs.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"
#include "serve/benchmark_config.hpp"

namespace magpie::mcp::detail {

using nlohmann::json;
namespace fs = std::filesystem;
namespace s = schema;

namespace {

jobs::JobContext ray_job_context(const ToolCall& call) {
  jobs::JobContext c;
  c.face = "mcp";
  c.command_line = call.command_line;
  c.cancel = call.cancel;
  c.progress = [progress = call.progress](const jobs::Progress& p) {
    progress({p.done, p.total, p.message});
  };
  // A Ray job's log while it runs: one progress message per line, "[label] line".
  c.log = [progress = call.progress](const std::string& source, const std::string& lines) {
    for (size_t pos = 0; pos < lines.size();) {
      size_t end = lines.find('\n', pos);
      if (end == std::string::npos) end = lines.size();
      if (end > pos) progress({0, std::nullopt, "[" + source + "] " + lines.substr(pos, end - pos)});
      pos = end + 1;
    }
  };
  return c;
}

json cluster_params() {
  return {{"ray_cluster_address", s::string("Ray dashboard (http://HEAD:8265, ray://HEAD:10001 or "
                                            "auto = RAY_ADDRESS, then 127.0.0.1:8265)")},
          {"ray_shared_storage_path",
           s::string("Folder every node and this machine see at the same path")}};
}

json with_cluster(json input, const std::vector<std::string>& required = {}) {
  const json params = cluster_params();
  for (const auto& [k, v] : params.items()) input["properties"][k] = v;
  if (!required.empty()) input["required"] = required;
  return input;
}

ray::RayConfig cluster_of(const ToolCall& call) {
  ray::RayConfig c;
  c.cluster_address = arg<std::string>(call, "ray_cluster_address", "auto");
  c.shared_storage_path = arg<std::string>(call, "ray_shared_storage_path", "");
  return c;
}

json nullable_integer() { return {{"type", json::array({"integer", "null"})}}; }

json run_ids_schema() {
  return s::array(s::integer(""), "rows of the local results store (magpie results show ID)");
}

json task_schema_properties() {
  return {{"task_id", s::string("Ray submission id")},
          {"status",
           s::one_of("", {"PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED", "UNKNOWN"})},
          {"message", s::string("Ray's words: why it waits, how it failed")},
          {"exit_code", nullable_integer()},
          {"cluster", s::string("the dashboard asked")},
          {"label", s::string("what Magpie ran (benchmark, analyze, a batch entry's name)")},
          {"command", s::string("the magpie command the job runs")},
          {"output_dir", s::string("where the job writes (shared storage, or the node's disk)")},
          {"wall_seconds", s::number("")}};
}

json task_schema(std::initializer_list<std::pair<const char*, json>> extra) {
  json props = task_schema_properties();
  for (const auto& [k, v] : extra) props[k] = v;
  return {
      {"type", "object"}, {"properties", props}, {"required", {"task_id", "status", "cluster"}}};
}

json task_json(const jobs::RayJobOutcome& o) {
  auto meta = [&](const char* key) {
    auto it = o.metadata.find(key);
    return it == o.metadata.end() ? std::string() : it->second;
  };
  return {{"task_id", o.submission_id},
          {"status", ray::to_string(o.status)},
          {"message", o.message},
          {"exit_code", o.exit_code ? json(*o.exit_code) : json(nullptr)},
          {"cluster", o.cluster_url},
          {"label", meta("magpie_label")},
          {"command", meta("magpie_command")},
          {"output_dir", o.remote_output_dir.string()},
          {"wall_seconds", o.wall_seconds}};
}

// The first report a job wrote (benchmark, analyze, compare, gap analysis), read back.
json first_report(const jobs::RayJobOutcome& o) {
  for (const char* name :
       {"benchmark_report.json", "compare_report.json", "analyze_report.json", "gap_analysis.json"})
    for (const auto& f : o.files)
      if (fs::path(f).filename() == name) {
        std::ifstream in(o.local_output_dir / f);
        json j = json::parse(in, nullptr, false);
        if (j.is_object()) return {{"file", (o.local_output_dir / f).string()}, {"content", j}};
      }
  return json::object();
}

}  // namespace

Tool ray_task_status_tool() {
  Tool t;
  t.name = "ray_task_status";
  t.annotations = {{"readOnlyHint", true}, {"openWorldHint", true}};
  t.title = "Ray job status";
  t.description =
      "Status of a Magpie job on a Ray cluster (PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED), "
      "Ray's message and the last lines of its log.";
  t.input_schema = with_cluster(
      s::input({{"task_id",
                 s::path("Ray submission id (from benchmark, benchmark_batch or ray_task_list)")},
                {"log_lines", s::with_default(s::integer("Log lines to return", 0), 20)}}),
      {"task_id"});
  t.output_schema = task_schema({{"logs_tail", s::string("")}});
  t.handler = [](const ToolCall& call) {
    auto o = jobs::ray_job_status(cluster_of(call), arg<std::string>(call, "task_id", ""),
                                  static_cast<size_t>(arg<int64_t>(call, "log_lines", 20)));
    json out = task_json(o);
    out["logs_tail"] = o.logs_tail;
    return ToolOutput{out, jobs::console_text(o) + o.logs_tail};
  };
  return t;
}

Tool ray_task_result_tool() {
  Tool t;
  t.name = "ray_task_result";
  t.annotations = {{"readOnlyHint", false}, {"destructiveHint", false}, {"openWorldHint", true}};
  t.title = "Ray job result";
  t.description =
      "A finished Ray job's results: gathers its files from shared storage into output_dir "
      "(default: "
      "where it was submitted from) and returns their list, its report, and its log tail.";
  t.input_schema = with_cluster(
      s::input({{"task_id", s::path("Ray submission id")},
                {"output_dir",
                 s::path("Gather the files here (default: the job's own local output folder)")}}),
      {"task_id"});
  t.output_schema =
      task_schema({{"collected", s::boolean("files gathered here")},
                   {"local_output_dir", s::string("")},
                   {"files", s::array(s::string(""), "relative to local_output_dir")},
                   {"where_results_are", s::string("when not gathered")},
                   {"report", s::any_object("{file, content} of the first report, or {}")},
                   {"logs_tail", s::string("")},
                   {"run_ids", run_ids_schema()}});
  t.handler = [](const ToolCall& call) {
    auto o = jobs::ray_job_result(cluster_of(call), arg<std::string>(call, "task_id", ""),
                                  arg<std::string>(call, "output_dir", ""), ray_job_context(call));
    json out = task_json(o);
    out["collected"] = o.collected;
    out["local_output_dir"] = o.local_output_dir.string();
    out["files"] = o.files;
    out["where_results_are"] = o.where_results_are;
    out["report"] = first_report(o);
    out["logs_tail"] = o.logs_tail;
    out["run_ids"] = o.run_ids;
    return ToolOutput{out, jobs::console_text(o)};
  };
  return t;
}

Tool ray_task_cancel_tool() {
  Tool t;
  t.name = "ray_task_cancel";
  t.annotations = {{"readOnlyHint", false},
                   {"destructiveHint", true},
                   {"idempotentHint", true},
                   {"openWorldHint", true}};
  t.title = "Stop a Ray job";
  t.description =
      "Stops a Magpie job on a Ray cluster (Ray kills its process tree) and returns its final "
      "status.";
  t.input_schema = with_cluster(s::input({{"task_id", s::path("Ray submission id")}}), {"task_id"});
  t.output_schema = task_schema({});
  t.handler = [](const ToolCall& call) {
    auto o = jobs::cancel_ray_job(cluster_of(call), arg<std::string>(call, "task_id", ""));
    return ToolOutput{task_json(o), jobs::console_text(o)};
  };
  return t;
}

Tool ray_task_list_tool() {
  Tool t;
  t.name = "ray_task_list";
  t.annotations = {{"readOnlyHint", true}, {"openWorldHint", true}};
  t.title = "Ray jobs";
  t.description =
      "The jobs on a Ray cluster, Magpie's only by default (their metadata names the command, "
      "config "
      "hash and output folder).";
  t.input_schema = with_cluster(
      s::input({{"magpie_only", s::with_default(s::boolean("Only jobs Magpie submitted"), true)},
                {"status", s::one_of("Only jobs in this state",
                                     {"PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED"})}}));
  t.output_schema =
      s::object({{"tasks", s::array(task_schema({}), "")}, {"cluster", s::string("")}}, {"tasks"});
  t.handler = [](const ToolCall& call) {
    ray::RayConfig cluster = cluster_of(call);
    auto all = jobs::list_ray_jobs(cluster, arg<bool>(call, "magpie_only", true));
    std::string only = arg<std::string>(call, "status", "");
    json tasks = json::array();
    std::string text;
    for (const auto& o : all) {
      if (!only.empty() && only != ray::to_string(o.status)) continue;
      tasks.push_back(task_json(o));
      text +=
          fmt::format("{}  {}  {}\n", o.submission_id, ray::to_string(o.status),
                      o.metadata.count("magpie_command") ? o.metadata.at("magpie_command") : "");
    }
    json out = {{"tasks", tasks},
                {"cluster", ray::resolve_cluster_address(cluster.cluster_address).url()}};
    return ToolOutput{out, text.empty() ? "no jobs\n" : text};
  };
  return t;
}

Tool benchmark_batch_tool() {
  Tool t;
  t.name = "benchmark_batch";
  t.annotations = {{"readOnlyHint", false}, {"destructiveHint", false}, {"openWorldHint", true}};
  t.title = "Batch of benchmarks";
  t.description =
      "Runs several benchmark configs (YAML files) as separate runs: on a Ray cluster when "
      "ray_cluster_address "
      "is given (each its own job; detach to return at once with the task ids), else here, one at "
      "a time or all "
      "at once with parallel. One summary table (batch_summary.json/.csv); a failed run is "
      "reported with its "
      "log tail while the others go on.";
  t.long_running = true;
  t.input_schema = with_cluster(
      s::input(
          {{"configs",
            s::array(s::path(""), "Benchmark YAML files, or batch files listing them", 1)},
           {"parallel", s::with_default(s::boolean("Run them all at once"), false)},
           {"output_dir", s::with_default(s::path("Each run writes to DIR/<name>"), "./results")},
           {"detach", s::with_default(s::boolean("Ray: submit and return the task ids"), false)}}),
      {"configs"});
  json run = s::object(
      {{"name", s::string("")},
       {"status", s::one_of("", {"SUCCEEDED", "FAILED", "STOPPED", "SUBMITTED", "ERROR"})},
       {"exit_code", s::integer("")},
       {"task_id", s::string("Ray submission id (empty for local runs)")},
       {"output_dir", s::string("")},
       {"wall_seconds", s::number("")},
       {"error", s::string("")},
       {"run_ids", run_ids_schema()}},
      {"name", "status", "exit_code"});
  t.output_schema = s::object({{"runs", s::array(run, "")},
                               {"all_succeeded", s::boolean("")},
                               {"summary_json", s::string("")},
                               {"summary_csv", s::string("")},
                               {"on_ray", s::boolean("")}},
                              {"runs", "all_succeeded", "summary_json"});
  t.handler = [](const ToolCall& call) {
    jobs::BatchRequest req;
    req.entries = jobs::load_batch_entries(arg<std::vector<std::string>>(call, "configs", {}));
    req.output_dir = arg<std::string>(call, "output_dir", "./results");
    if (has_arg(call, "ray_cluster_address")) req.ray = cluster_of(call);
    req.detach = arg<bool>(call, "detach", false);
    if (req.detach && !req.ray)
      throw Error(ErrorKind::kUsage, "detach needs ray_cluster_address", "", std::nullopt,
                  "give the cluster, or drop detach to run here");
    req.workers = arg<bool>(call, "parallel", false) || req.ray ? 0 : 1;
    jobs::BatchOutcome o = jobs::run_batch(req, ray_job_context(call));
    if (call.cancelled()) throw Error(ErrorKind::kCancelled, "cancelled by the client");
    json runs = json::array();
    for (const auto& r : o.runs)
      runs.push_back({{"name", r.name},
                      {"status", r.status},
                      {"exit_code", r.exit_code},
                      {"task_id", r.submission_id},
                      {"output_dir", r.output_dir.string()},
                      {"wall_seconds", r.wall_seconds},
                      {"error", r.error},
                      {"run_ids", r.run_ids}});
    json out = {{"runs", runs},
                {"all_succeeded", o.all_succeeded()},
                {"summary_json", o.summary_json.string()},
                {"summary_csv", o.summary_csv.string()},
                {"on_ray", req.ray.has_value()}};
    return ToolOutput{out, jobs::console_text(o)};
  };
  return t;
}

// ---- benchmark with ray_* ----

void add_ray_benchmark_params(json& input_schema) {
  auto& p = input_schema["properties"];
  const json params = cluster_params();
  for (const auto& [k, v] : params.items()) p[k] = v;
  p["ray_entrypoint_num_gpus"] = s::number("GPUs the job asks of the cluster", 0);
  p["ray_entrypoint_num_cpus"] = s::number("CPUs the job asks of the cluster", 0);
  p["ray_env_vars"] = {
      {"type", "object"},
      {"additionalProperties", {{"type", "string"}}},
      {"description", "Environment of the job on the node (runtime_env env_vars)"}};
  p["ray_node_run_mode"] =
      s::with_default(s::one_of("How the node runs the engine", {"local", "docker"}), "local");
  p["ray_wait"] = s::with_default(
      s::boolean("Wait for the job and gather its results (false: return the task id)"), true);
  p["ray_pending_timeout_s"] =
      s::number("Stop the job if it waits longer than this for resources (default 600)", 1);
  p["run_mode"]["enum"].push_back("ray");
}

bool wants_ray(const ToolCall& call) {
  return arg<std::string>(call, "run_mode", "") == "ray" || has_arg(call, "ray_cluster_address");
}

ToolOutput ray_benchmark(const ToolCall& call) {
  ray::RayConfig cluster = cluster_of(call);
  if (has_arg(call, "ray_entrypoint_num_gpus"))
    cluster.entrypoint_num_gpus = arg<double>(call, "ray_entrypoint_num_gpus", 0);
  if (has_arg(call, "ray_entrypoint_num_cpus"))
    cluster.entrypoint_num_cpus = arg<double>(call, "ray_entrypoint_num_cpus", 0);
  if (has_arg(call, "ray_env_vars"))
    for (const auto& [k, v] : call.arguments["ray_env_vars"].items())
      cluster.env_vars[k] = v.get<std::string>();
  cluster.run_mode = arg<std::string>(call, "ray_node_run_mode", "local");
  if (has_arg(call, "ray_pending_timeout_s"))
    cluster.pending_timeout_s = arg<double>(call, "ray_pending_timeout_s", 600);
  // The node runs the same benchmark through the CLI: arguments become its flags.
  std::vector<std::string> args = {"benchmark", arg<std::string>(call, "framework", "vllm")};
  auto flag = [&](const char* name, const char* cli) {
    if (!has_arg(call, name)) return;
    const json& v = call.arguments[name];
    args.push_back(cli);
    args.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  };
  flag("model", "--model");
  flag("precision", "--precision");
  flag("tp", "--tp");
  flag("concurrency", "--concurrency");
  flag("input_len", "--input-len");
  flag("output_len", "--output-len");
  flag("num_prompts", "--num-prompts");
  flag("range_ratio", "--range-ratio");
  flag("token_id_max", "--token-id-max");
  flag("warmups", "--warmups");
  flag("docker_image", "--docker-image");
  flag("timeout_seconds", "--timeout");
  flag("ready_timeout_seconds", "--ready-timeout");
  flag("endpoint", "--endpoint");
  flag("engine_executable", "--engine-executable");
  if (arg<bool>(call, "torch_profiler", false)) args.push_back("--torch-profiler");
  if (arg<bool>(call, "cpu_engine", false)) args.push_back("--cpu-engine");
  for (const auto& e : arg<std::vector<std::string>>(call, "engine_args", {}))
    args.push_back("--engine-arg=" + e);
  if (has_arg(call, "extra_envs"))
    for (const auto& [k, v] : call.arguments["extra_envs"].items())
      args.push_back("--env=" + k + "=" + v.get<std::string>());
  serve::BenchmarkFlags shape;
  load_shape_flags(call, shape);
  append_load_shape_args(shape, args);
  args.push_back("--run-mode");
  args.push_back(cluster.run_mode);
  for (const char* unsupported :
       {"tracelens", "gap_analysis_top_k", "gap_analysis_start_pct", "gap_analysis_end_pct"})
    if (has_arg(call, unsupported))
      throw Error(
          ErrorKind::kUsage, fmt::format("{} is not passed to a Ray benchmark yet", unsupported),
          "", std::nullopt, "use a benchmark YAML with benchmark_batch, or run_mode local|docker");
  jobs::RayJobRequest req;
  req.cluster = cluster;
  req.label = "benchmark";
  req.magpie_args = args;
  req.local_output_dir = arg<std::string>(call, "output_dir", "./results");
  req.detach = !arg<bool>(call, "ray_wait", true);
  for (const auto& a : args) req.config_text += a + "\n";
  jobs::RayJobOutcome o = jobs::run_ray_job(req, ray_job_context(call));
  if (call.cancelled())
    throw Error(ErrorKind::kCancelled, "cancelled by the client; the Ray job was stopped");
  json report = first_report(o);
  std::string workspace = report.contains("file")
                              ? fs::path(report["file"].get<std::string>()).parent_path().string()
                              : o.local_output_dir.string();
  const bool submitted_only = req.detach;
  const bool success = submitted_only || jobs::exit_code_of(o) == 0;
  json out = {{"success", success},
              {"workspace", workspace},
              {"run_id", o.run_ids.empty() ? int64_t{0} : o.run_ids.front()},
              {"report", report.contains("content") ? report["content"] : json::object()},
              {"ray_task", task_json(o)}};
  std::string text = jobs::console_text(o);
  if (!success) throw Error(ErrorKind::kRejected, "the Ray benchmark job did not succeed\n" + text);
  return ToolOutput{out, text};
}

}  // namespace magpie::mcp::detail
