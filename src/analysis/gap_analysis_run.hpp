#pragma once
// The whole `--trace-dir` job: discover files, load them in parallel, analyse
// each rank, keep going past broken files, merge.
#include <filesystem>
#include <functional>

#include "analysis/gap_analysis.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::analysis {

struct GapAnalysisRunOptions {
  GapAnalysisConfig config;
  trace::IngestOptions ingest;
  // Called with a line of progress ("loaded rank0.json.gz: 1.2 M events in 0.4 s").
  std::function<void(const std::string&)> progress;
};

// Throws Error(kNotFound) when there is nothing to read, and the first file's
// error when every file failed; Error(kNoGpuEvents) when nothing matched.
GapAnalysisResult run_gap_analysis(const std::filesystem::path& trace_dir,
                                   const GapAnalysisRunOptions& options);

}  // namespace magpie::analysis
