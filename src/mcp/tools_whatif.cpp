// The what-if tool: a trace's critical path, what-if predictions and the
// fixes ranked by predicted end-to-end gain (src/jobs/critical_path_jobs).
#include "jobs/critical_path_jobs.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"

namespace magpie::mcp::detail {

using nlohmann::json;
namespace s = schema;

Tool whatif_tool() {
  Tool t;
  t.name = "whatif";
  t.title = "Critical path and what-if predictions of a trace";
  t.description =
      "What sets end-to-end time in a PyTorch profiler (Kineto) trace and what a change would buy: "
      "the critical path per iteration split into cpu/launch/gpu/sync/collective/idle, the bound "
      "label, per-op gain bounds, and the predicted end-to-end gain of each scenario "
      "(op:NAME:2x, op:NAME:+30us, kernel:TEXT:1.5x, cpu:2x, launch:0, sync:0; docs/CRITICAL_PATH.md). "
      "Each rank's `recommendations` rank the fixes by predicted gain: a host fix (CUDA graphs, "
      "fewer syncs, host code) first on a launch-/CPU-/sync-bound trace, kernel work first on a "
      "GPU-bound one. The answer is critical_path.json as `magpie whatif -o` writes it; pass it to "
      "suggest_optimizations as analysis_result.";
  t.long_running = true;
  t.input_schema = s::input(
      {{"trace", s::path("A Kineto trace (.json or .json.gz)")},
       {"scenarios", s::array(s::string("e.g. launch:0, op:aten::mm:2x"), "What-if scenarios to predict")},
       {"output_dir", s::path("Also write critical_path.json/csv, critical_path_ops.csv, whatif.csv here")}},
      {"trace"});
  t.output_schema = s::object({{"ranks", s::array(s::any_object("one rank's critical path"), "")},
                               {"ingest_seconds", s::number("")},
                               {"analysis_seconds", s::number("")}},
                              {"ranks"});
  t.handler = [](const ToolCall& call) {
    jobs::WhatIfRequest r;
    r.trace_path = arg<std::string>(call, "trace", "");
    r.scenarios = arg<std::vector<std::string>>(call, "scenarios", {});
    r.output_dir = arg<std::string>(call, "output_dir", "");
    jobs::JobContext c;
    c.face = "mcp";
    c.command_line = call.command_line;
    c.cancel = call.cancel;
    c.progress = [progress = call.progress](const jobs::Progress& p) { progress({p.done, p.total, p.message}); };
    const jobs::WhatIfOutcome o = jobs::run_whatif(r, c);
    return ToolOutput{jobs::report_json(o), jobs::console_text(o)};
  };
  return t;
}

}  // namespace magpie::mcp::detail
