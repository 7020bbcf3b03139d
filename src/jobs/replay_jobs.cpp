#include "jobs/replay_jobs.hpp"

#include <fmt/format.h>

#include <chrono>

#include "core/error.hpp"

namespace magpie::jobs {

ReplayJobOutcome replay_trace_ops(const replay::ReplayRequest& request, const JobContext& context) {
  const auto start = std::chrono::steady_clock::now();
  context.report(0, 3, fmt::format("reading {}", request.trace_path.string()));
  ReplayJobOutcome out;
  out.plan = replay::run_replay(request);
  if (context.cancelled()) throw Error(ErrorKind::kCancelled, "replay cancelled");
  context.report(2, 3,
                 fmt::format("writing {} replays to {}", out.plan.targets.size(),
                             request.output_dir.string()));
  out.files = replay::write_replay(out.plan, request.output_dir);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  context.report(3, 3, "done");
  return out;
}

nlohmann::json report_json(const ReplayJobOutcome& outcome) {
  auto j = replay::outcome_json(outcome.plan, &outcome.files);
  j["seconds"] = outcome.seconds;
  j["summary_md"] = outcome.files.summary_md.string();
  j["summary_json"] = outcome.files.summary_json.string();
  return j;
}

std::string console_text(const ReplayJobOutcome& outcome) {
  std::string s = replay::summary_markdown(outcome.plan);
  s += fmt::format("\nWrote {} replay(s) to {} ({} skipped with reasons; replay.md lists them).\n",
                   outcome.plan.targets.size(), outcome.files.dir.string(),
                   outcome.plan.skipped.size());
  for (const auto& f : outcome.files.targets) {
    if (f.candidate_kept)
      s += fmt::format("Kept the existing {} (not overwritten).\n", f.candidate.string());
  }
  if (!outcome.files.targets.empty()) {
    s += fmt::format("Next: edit {} and run `magpie compare -k {}`.\n",
                     outcome.files.targets.front().candidate.string(),
                     outcome.files.targets.front().compare_yaml.string());
  }
  return s;
}

}  // namespace magpie::jobs
