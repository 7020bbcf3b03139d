#pragma once
// The trace-diff job: `magpie trace-diff` and the MCP tool `trace_diff` come
// here. Loads BEFORE and AFTER, diffs them (analysis/trace_diff.hpp) and
// writes trace_diff.json, the per-op and per-kernel CSVs and the HTML page.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/trace_diff.hpp"
#include "jobs/job_context.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::jobs {

struct TraceDiffRequest {
  std::filesystem::path before, after;
  trace::IngestOptions ingest;
  std::filesystem::path output_dir;  // empty: write nothing
  int rank = -1;                     // a merged multi-rank file: compare this rank (-1: the first)
  analysis::TraceDiffOptions options;
};

struct TraceDiffOutcome {
  analysis::TraceDiff diff;
  std::vector<std::filesystem::path> files;
  double ingest_seconds = 0;
  double analysis_seconds = 0;
};

// Throws the loader's errors (naming the file) for an unreadable trace, and
// Error(kUsage) for a --rank a side does not hold.
TraceDiffOutcome run_trace_diff(const TraceDiffRequest& request, const JobContext& context);

// trace_diff.json as written; `rows` caps the op and kernel lists (0: all).
nlohmann::json report_json(const TraceDiffOutcome& outcome, size_t rows = 0);
// The console summary (stdout).
std::string console_text(const TraceDiffOutcome& outcome, size_t rows = 15);

}  // namespace magpie::jobs
