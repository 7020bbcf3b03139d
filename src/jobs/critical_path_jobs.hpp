#pragma once
// The critical-path / what-if job: `magpie whatif` comes here (and any other
// face that wants the same files). Loads a trace once, builds each rank's
// dependency graph, its critical paths per iteration, the requested what-if
// scenarios and the per-op gain bounds, and writes them.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/critical_path.hpp"
#include "analysis/critical_path_advice.hpp"
#include "analysis/critical_path_whatif.hpp"
#include "jobs/job_context.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::jobs {

struct WhatIfRequest {
  std::filesystem::path trace_path;  // a file, or a folder of one job's rank traces
  // More rank traces of the same job: with several ranks, their collectives
  // are linked across ranks (analysis/critical_path_ranks.hpp).
  std::vector<std::filesystem::path> other_ranks;
  std::vector<std::string> scenarios;  // analysis::parse_scenario syntax
  trace::IngestOptions ingest;
  std::filesystem::path output_dir;  // empty: write nothing
  size_t bound_ops = 10;             // ops per side (GPU, host) with a gain bound
  // The profiler's own cost, taken out before the scenarios and gain bounds
  // (analysis::calibrate); the critical-path report stays as traced.
  analysis::CalibrationRequest calibration;
  // The gap launch:0 leaves between kernels of a CUDA graph, measured on the
  // GPU without the profiler (examples/critical_path/graph_gap.py); -1: from
  // the trace's graph-replayed kernels or the GPU model (GraphGapSource).
  int64_t graph_gap_ns = -1;
};

struct RankWhatIf {
  analysis::CriticalPathReport report;
  std::vector<analysis::WhatIfResult> results;
  std::vector<analysis::OpGainBound> bounds;
  analysis::Calibration calibration;
  analysis::CriticalPathSummary summary;  // the host fixes and the ranked recommendations
};

struct WhatIfOutcome {
  std::vector<RankWhatIf> ranks;
  size_t cross_rank_matched = 0;  // collective kernels linked across ranks
  std::vector<std::string> warnings;
  std::vector<std::filesystem::path> files;
  double ingest_seconds = 0;
  double analysis_seconds = 0;  // graph + paths + scenarios + bounds, all ranks
};

// Throws Error(kUsage) for a bad scenario (before reading the trace), and the
// loader's errors for unreadable traces.
WhatIfOutcome run_whatif(const WhatIfRequest& request, const JobContext& context);

// critical_path.json as written.
nlohmann::json report_json(const WhatIfOutcome& outcome);
// The console summary (stdout).
std::string console_text(const WhatIfOutcome& outcome);

}  // namespace magpie::jobs
