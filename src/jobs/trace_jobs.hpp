#pragma once
// Trace jobs: gap analysis over a trace directory and TraceLens stage reports,
// as typed calls. The CLI (`magpie benchmark --trace-dir`, `magpie tracelens`)
// and the MCP tools (`gap_analysis`, `tracelens`) both come here, so the same
// request writes the same report files from either face.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/gap_analysis.hpp"
#include "analysis/gap_analysis_report.hpp"
#include "analysis/tracelens_report.hpp"
#include "jobs/job_context.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::jobs {

struct GapAnalysisRequest {
  std::filesystem::path trace_dir;  // DIR, or DIR/torch_trace when that exists
  analysis::GapAnalysisConfig config;
  trace::IngestOptions ingest;
  bool rank_csv = true;
  analysis::SourceSearchOptions sources;
  // Reports go to output_dir/gap_analysis_<time>/; output_dir/gap_analysis links to the newest.
  std::filesystem::path output_dir = "./results";
};

struct GapAnalysisOutcome {
  analysis::GapAnalysisResult result;
  analysis::GapReportFiles files;
  double seconds = 0;
  int64_t run_id = 0;  // results-store row; 0 when not recorded
};

// Throws magpie::Error for bad requests and unreadable or kernel-less traces
// (kinds as README's exit codes); the run is recorded as failed first.
GapAnalysisOutcome run_gap_analysis(const GapAnalysisRequest& request, const JobContext& context);

// benchmark_report.json's `gap_analysis` block, as gap_analysis.json holds it.
nlohmann::json report_json(const GapAnalysisOutcome& outcome);
// Magpie's console summary (stdout).
std::string console_text(const GapAnalysisOutcome& outcome);
// Warnings of the run and its ranks, and the files skipped with their reasons (stderr).
std::vector<std::string> warnings(const GapAnalysisOutcome& outcome);

struct TraceLensOutcome {
  analysis::TraceLensResult result;
  int64_t run_id = 0;
};

TraceLensOutcome run_tracelens(const analysis::TraceLensOptions& request, const JobContext& context);

// One trace file in memory, for a caller that reads its tables (the Python
// API's load_trace): the events as ingested and the GPU timeline that gap
// analysis computes for the whole trace. Nothing is written or recorded.
struct LoadedTrace {
  trace::Trace trace;
  analysis::GpuTimeline timeline;
};

// Throws magpie::Error as gap analysis does for the same file (kNotFound,
// kBadFormat, ...); a folder is a usage error (gap_analysis reads folders).
LoadedTrace load_trace(const std::filesystem::path& path, const trace::IngestOptions& ingest,
                       const JobContext& context);

// The manifest (tracelens_manifest.json).
nlohmann::json report_json(const TraceLensOutcome& outcome);
// What `magpie tracelens` prints on stdout (warnings and errors excluded).
std::string console_text(const TraceLensOutcome& outcome);

}  // namespace magpie::jobs
