#pragma once
// The replay job: `magpie replay` and the MCP tool `create_kernel_config`
// (from a trace op) both come here, so either face writes the same files.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jobs/job_context.hpp"
#include "replay/replay.hpp"
#include "replay/replay_writer.hpp"

namespace magpie::jobs {

struct ReplayJobOutcome {
  replay::ReplayOutcome plan;
  replay::ReplayFiles files;
  double seconds = 0;
};

// Loads the trace, plans, writes request.output_dir. Throws magpie::Error
// (kinds as README's exit codes) for bad requests, unreadable traces and
// --op names the trace does not have.
ReplayJobOutcome replay_trace_ops(const replay::ReplayRequest& request, const JobContext& context);

// replay.json as written.
nlohmann::json report_json(const ReplayJobOutcome& outcome);
// The table of selected ops and the next command (stdout).
std::string console_text(const ReplayJobOutcome& outcome);

}  // namespace magpie::jobs
