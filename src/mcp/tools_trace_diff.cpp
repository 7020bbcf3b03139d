// The trace_diff tool: a thin face over jobs::run_trace_diff, the same job
// (and files) as `magpie trace-diff`.
#include "core/error.hpp"
#include "jobs/trace_diff_jobs.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"

namespace magpie::mcp::detail {

namespace s = schema;

Tool trace_diff_tool() {
  Tool t;
  t.name = "trace_diff";
  t.title = "Structural diff of two profiler traces";
  t.description =
      "Diffs two PyTorch profiler traces of one workload (before and after a change): ops matched by "
      "their place in the op tree (name, input shapes, parent ops), kernels by their launching op, each "
      "with its change in calls, host and GPU time (changed/added/removed/moved); the end-to-end change "
      "(whole window, median iteration) explained by the critical path's breakdown (cpu, launch, gpu, "
      "sync, collective, idle) before and after, and the ops whose critical-path time changed most. "
      "With output_dir, writes trace_diff.json and per-op / per-kernel CSVs there.";
  t.long_running = true;
  t.input_schema = s::input({{"before", s::path("Trace before the change (.json/.json.gz)")},
                             {"after", s::path("Trace after the change")},
                             {"output_dir", s::path("Write trace_diff.json and the CSVs here (optional)")},
                             {"rank", s::integer("Merged multi-rank traces: compare this rank (default: the first)", 0)},
                             {"rows", s::with_default(s::integer("Ops and kernels in the reply (0: all)", 0), 50)}},
                            {"before", "after"});
  t.output_schema = s::object({{"report", s::any_object("trace_diff.json (ops and kernels capped at rows)")},
                               {"files", s::array(s::string(""), "Files written")}},
                              {"report"});
  t.handler = [](const ToolCall& call) {
    jobs::TraceDiffRequest request;
    request.before = arg<std::string>(call, "before", "");
    request.after = arg<std::string>(call, "after", "");
    request.output_dir = arg<std::string>(call, "output_dir", "");
    request.rank = static_cast<int>(arg<int64_t>(call, "rank", -1));
    jobs::JobContext context;
    context.face = "mcp";
    context.command_line = call.command_line;
    context.cancel = call.cancel;
    context.progress = [progress = call.progress](const jobs::Progress& p) { progress({p.done, p.total, p.message}); };
    const auto out = jobs::run_trace_diff(request, context);
    if (call.cancelled()) throw Error(ErrorKind::kCancelled, "cancelled by the client");
    std::vector<std::string> files;
    for (const auto& f : out.files) files.push_back(f.string());
    nlohmann::json j = {{"report", jobs::report_json(out, static_cast<size_t>(arg<int64_t>(call, "rows", 50)))},
                        {"files", files}};
    return ToolOutput{j, jobs::console_text(out)};
  };
  return t;
}

}  // namespace magpie::mcp::detail
