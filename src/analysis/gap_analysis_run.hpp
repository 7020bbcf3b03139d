#pragma once
// The whole `--trace-dir` job: discover files, load them in parallel, analyse
// each rank, keep going past broken files, merge.
#include <filesystem>
#include <functional>
#include <string>

#include "analysis/gap_analysis.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::analysis {

struct GapAnalysisRunOptions {
  GapAnalysisConfig config;
  trace::IngestOptions ingest;
  // Called with a line of progress ("loaded rank0.json.gz: 1.2 M events in 0.4 s").
  std::function<void(const std::string&)> progress;
  // A folder of CPU-only traces (kCpuOnly below) under the default categories
  // is ranked over its cpu_op events, by self time, with
  // GapAnalysisResult::cpu_fallback_note set and warned, instead of Error(kNoGpuEvents).
  bool cpu_fallback = false;
};

// Why a rank counted nothing, and what to do. A folder's error gives the
// first cause in this order over its ranks.
struct NoDeviceEvents {
  enum Cause {
    kFilter,              // the user's --categories matched nothing
    kWindow,              // GPU events exist, none in the window / above the minimum duration
    kRangeProfiler,       // launches + cuda_profiler_range: CUPTI's range profiler replaced kernels
    kLostDeviceActivity,  // launches without device events: CUPTI delivered nothing
    kOtherDevice,         // another accelerator's categories (MTIA)
    kCpuOnly,             // cpu ops only
    kEmpty,               // neither
  } cause;
  std::string what;
  std::string fix;
};
NoDeviceEvents explain_no_device_events(const RankGapResult& rank, const GapAnalysisConfig& config);

// Throws Error(kNotFound) when there is nothing to read, and the first file's
// error when every file failed; Error(kNoGpuEvents) when nothing matched.
GapAnalysisResult run_gap_analysis(const std::filesystem::path& trace_dir,
                                   const GapAnalysisRunOptions& options);

}  // namespace magpie::analysis
