// The kernel-workflow helpers: find kernels in a project (kernel discovery),
// draft a kernel config for one (kernel config writer), and turn a measured
// result into ranked advice (src/advice). Mapping only.
#include <fmt/format.h>

#include "advice/suggestions.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "jobs/replay_jobs.hpp"
#include "kernel/kernel_config_writer.hpp"
#include "kernel/kernel_discovery.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"

namespace magpie::mcp::detail {

using nlohmann::json;
namespace fs = std::filesystem;
namespace s = schema;

Tool discover_kernels_tool() {
  Tool t;
  t.name = "discover_kernels";
  t.title = "Find GPU kernels in a project";
  t.description =
      "Walks a project (or one source file) and lists its GPU kernels with file and line: CUDA "
      "and HIP __global__ functions, Triton @triton.jit functions, PyTorch nn.Module classes. "
      "Pick one and draft its config with create_kernel_config.";
  t.input_schema = s::input(
      {{"project_path", s::path("Project folder, or one source file")},
       {"kernel_type",
        s::with_default(
            s::one_of("Only this language", {"hip", "cuda", "triton", "pytorch", "all"}), "all")},
       {"include_tests",
        s::with_default(s::boolean("Also scan test/, tests/, test_*.py, *_test.*"), false)},
       {"include_examples", s::with_default(s::boolean("Also scan examples/, example/"), true)}},
      {"project_path"});
  json kernel = s::object({{"type", s::one_of("", {"cuda", "hip", "triton", "pytorch"})},
                           {"file", s::string("absolute path")},
                           {"line", s::integer("1-based")},
                           {"name", s::string("")}},
                          {"type", "file", "line", "name"});
  t.output_schema = s::object({{"project_path", s::string("")},
                               {"count", s::integer("")},
                               {"files_scanned", s::integer("")},
                               {"kernels", s::array(kernel, "by file, then line")},
                               {"warnings", s::array(s::string(""), "")}},
                              {"count", "kernels"});
  t.handler = [](const ToolCall& call) {
    kernel::DiscoveryRequest r;
    r.project_path = arg<std::string>(call, "project_path", "");
    r.kernel_type = arg<std::string>(call, "kernel_type", "all");
    r.include_tests = arg<bool>(call, "include_tests", false);
    r.include_examples = arg<bool>(call, "include_examples", true);
    kernel::DiscoveryResult res = kernel::discover_kernels(r);
    json kernels = json::array();
    std::string text;
    for (const auto& k : res.kernels) {
      kernels.push_back({{"type", kernel::to_string(k.type)},
                         {"file", k.file.string()},
                         {"line", k.line},
                         {"name", k.name}});
      text += std::string(kernel::to_string(k.type)) + "  " + k.name + "  " + k.file.string() +
              ":" + std::to_string(k.line) + "\n";
    }
    text = std::to_string(res.kernels.size()) + " kernels in " + std::to_string(res.files_scanned) +
           " files\n" + text;
    json out = {{"project_path", r.project_path.string()},
                {"count", res.kernels.size()},
                {"files_scanned", res.files_scanned},
                {"kernels", std::move(kernels)},
                {"warnings", res.warnings}};
    return ToolOutput{out, text};
  };
  return t;
}

namespace {

// create_kernel_config from a trace op: the replay job (as `magpie replay
// TRACE --op NAME[:SHAPES] --top-k 1`), returning its compare YAML.
ToolOutput kernel_config_from_trace(const ToolCall& call) {
  replay::ReplayRequest r;
  r.trace_path = arg<std::string>(call, "trace_path", "");
  std::string op = arg<std::string>(call, "op", "");
  const std::string shapes = arg<std::string>(call, "op_shapes", "");
  if (!shapes.empty()) op += ":" + shapes;
  r.ops.push_back(replay::parse_op_query(op));
  r.top_k = 1;  // the op's signature with most GPU time (or the one op_shapes names)
  const std::string config_path = arg<std::string>(call, "config_path", "");
  r.output_dir = arg<std::string>(call, "output_dir", "");
  if (r.output_dir.empty()) {
    r.output_dir =
        config_path.empty() ? fs::path("./replay") : fs::path(config_path).parent_path() / "replay";
  }
  jobs::JobContext context;
  context.face = "mcp";
  context.command_line = call.command_line;
  context.cancel = call.cancel;
  context.progress = [progress = call.progress](const jobs::Progress& p) {
    progress({p.done, p.total, p.message});
  };
  const jobs::ReplayJobOutcome o = jobs::replay_trace_ops(r, context);
  if (o.plan.targets.empty()) {
    const std::string why =
        o.plan.skipped.empty() ? "nothing selected" : o.plan.skipped.front().reason;
    throw Error(ErrorKind::kRejected, fmt::format("{} cannot be replayed: {}", op, why),
                r.trace_path.string());
  }
  const auto& target = o.plan.targets.front();
  const auto& files = o.files.targets.front();
  std::string content = replay::compare_yaml_text(target, r.trace_path.filename().string());
  json out = {
      {"config_content", content},
      {"usage",
       fmt::format(
           "magpie compare -k {}  (edit {} first; MCP: compare with kernel_config set to it)",
           files.compare_yaml.string(), files.candidate.string())},
      {"config_path", fs::absolute(files.compare_yaml).lexically_normal().string()},
      {"warnings", o.plan.warnings},
      {"replay", replay::note_json(target)}};
  out["replay"]["files"] = {{"baseline", files.baseline.string()},
                            {"candidate", files.candidate.string()},
                            {"note_md", files.note_md.string()},
                            {"dir", files.dir.string()}};
  if (!config_path.empty()) {
    // Elsewhere than the replay folder: point the entries at it.
    content = replay::compare_yaml_text(target, r.trace_path.filename().string(),
                                        fs::absolute(files.dir).string());
    write_file_atomic(config_path, content);
    out["config_content"] = content;
    out["config_path"] = fs::absolute(config_path).lexically_normal().string();
  }
  std::string text = content + "\n# " + out["usage"].get<std::string>() + "\n";
  for (const auto& w : o.plan.warnings) text += "# warning: " + w + "\n";
  return ToolOutput{out, text};
}

}  // namespace

Tool create_kernel_config_tool() {
  Tool t;
  t.name = "create_kernel_config";
  t.title = "Draft a kernel config";
  t.description =
      "Drafts the kernel YAML that analyze/compare read (kernel_config) for one kernel: its "
      "source, testcase command (exit status 0 = correct), build command and folder. Returns the "
      "YAML and how to use it; with config_path, also writes the file. Or, from a PyTorch profiler "
      "trace (trace_path + op): replays the op at its recorded shapes, strides and dtypes as a "
      "baseline module with a candidate copy to edit, and returns their compare YAML (magpie "
      "replay).";
  t.input_schema = s::input(
      {{"kernel_id",
        s::path("Name of the kernel (no path separators); names its workspace folder")},
       {"kernel_path", s::path("The kernel source file")},
       {"testcase_command", s::path("Command that runs and checks the kernel; exit 0 = correct")},
       {"kernel_type", s::with_default(s::one_of("", {"hip", "cuda", "triton", "pytorch"}), "hip")},
       {"working_dir", s::string("Folder commands run in (default: the kernel file's folder)")},
       {"compile_command",
        s::string("Build command (default: Magpie's nvcc/hipcc build; none for Python)")},
       {"config_path", s::path("Write the YAML here too (atomically)")},
       {"trace_path",
        s::path("A Kineto trace recorded with record_shapes=True: config from one of its ops")},
       {"op",
        s::string("With trace_path: the op, e.g. aten::mm (or aten::mm:[[16,4096],[4096,4096]])")},
       {"op_shapes", s::string("With trace_path: shapes of the op's first tensor arguments, e.g. "
                               "[[16,4096],[4096,4096]]; "
                               "default: the op's signature with most GPU time")},
       {"output_dir", s::string("With trace_path: where the replay folder goes (default: beside "
                                "config_path, else ./replay)")}});
  t.input_schema["anyOf"] =
      json::array({{{"required", {"kernel_id", "kernel_path", "testcase_command"}}},
                   {{"required", {"trace_path", "op"}}}});
  t.output_schema = s::object(
      {{"config_content", s::string("the YAML")},
       {"usage", s::string("how to run it")},
       {"config_path", s::string("where it was written, when asked")},
       {"warnings", s::array(s::string(""), "")},
       {"replay", s::any_object("from a trace op: the replayed op, its recorded cost and files")}},
      {"config_content", "usage"});
  t.handler = [](const ToolCall& call) {
    if (has_arg(call, "trace_path")) return kernel_config_from_trace(call);
    kernel::KernelConfigDraftRequest r;
    r.kernel_id = arg<std::string>(call, "kernel_id", "");
    r.kernel_path = arg<std::string>(call, "kernel_path", "");
    r.testcase_command = arg<std::string>(call, "testcase_command", "");
    r.kernel_type = arg<std::string>(call, "kernel_type", "hip");
    r.working_dir = arg<std::string>(call, "working_dir", "");
    r.compile_command = arg<std::string>(call, "compile_command", "");
    r.config_path = arg<std::string>(call, "config_path", "");
    kernel::KernelConfigDraft d = kernel::draft_kernel_config(r);
    std::string usage = d.usage + "  (MCP: analyze with kernel_config set to the saved file)";
    json out = {{"config_content", d.config_content}, {"usage", usage}, {"warnings", d.warnings}};
    if (!r.config_path.empty()) {
      write_file_atomic(r.config_path, d.config_content);
      out["config_path"] = fs::absolute(r.config_path).lexically_normal().string();
    }
    std::string text = d.config_content + "\n# " + usage + "\n";
    for (const auto& w : d.warnings) text += "# warning: " + w + "\n";
    return ToolOutput{out, text};
  };
  return t;
}

Tool suggest_optimizations_tool() {
  Tool t;
  t.name = "suggest_optimizations";
  t.title = "Optimization advice";
  t.description =
      "Ranked bottlenecks and what to try, from what Magpie measured: one analyze result (an "
      "entry of analyze_report.json's results, or compare_report.json's results.kernel_results), "
      "a gap_analysis report (or a benchmark_report.json), TraceLens kernel-roofline rows, or "
      "roofline_csv, a *_kernel_roofline_simple.csv written by tracelens. Each bottleneck carries "
      "the figure that triggered it.";
  t.input_schema = {
      {"type", "object"},
      {"properties",
       {{"analysis_result",
         {{"type", json::array({"object", "array"})},
          {"description", "An analyze result, a gap_analysis report, or TraceLens roofline rows"}}},
        {"roofline_csv", s::path("A *_kernel_roofline_simple.csv from tracelens")}}},
      {"additionalProperties", false},
      {"anyOf",
       json::array({{{"required", {"analysis_result"}}}, {{"required", {"roofline_csv"}}}})}};
  json bottleneck =
      s::object({{"kind", s::string("memory_bound, compute_bound, launch_bound, ...")},
                 {"subject", s::string("")},
                 {"severity", s::number("0-1")},
                 {"evidence", s::string("")}},
                {"kind", "severity"});
  json suggestion =
      s::object({{"title", s::string("")}, {"detail", s::string("")}, {"priority", s::integer("")}},
                {"title"});
  t.output_schema =
      s::object({{"kernel_id", s::string("")},
                 {"overall_score", s::number("")},
                 {"bottlenecks", s::array(bottleneck, "most severe first")},
                 {"suggestions", s::array(suggestion, "by priority")},
                 {"summary", s::string("")},
                 {"source_kind", s::string("analyze_result | tracelens_report | gap_report")}},
                {"kernel_id", "overall_score", "bottlenecks", "suggestions", "summary"});
  t.handler = [](const ToolCall& call) {
    advice::Advice a =
        has_arg(call, "roofline_csv")
            ? advice::suggest_from_roofline_csv(arg<std::string>(call, "roofline_csv", ""))
            : advice::suggest_optimizations(call.arguments["analysis_result"]);
    std::string text = a.summary + "\n";
    for (const auto& sg : a.suggestions)
      text += std::to_string(sg.priority) + ". " + sg.title + " (" + sg.applies_to +
              "): " + sg.detail + "\n";
    return ToolOutput{advice::to_json(a), text};
  };
  return t;
}

}  // namespace magpie::mcp::detail
