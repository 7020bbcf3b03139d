#pragma once
// Gap analysis (Magpie-compatible, docs/MAGPIE_COMPATIBILITY.md §5): which GPU kernels cost the
// most, per rank and merged over ranks, plus each rank's GPU timeline.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/critical_path_advice.hpp"
#include "analysis/gpu_timeline.hpp"
#include "gpu/environment.hpp"
#include "sources/kernel_name.hpp"
#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

struct GapAnalysisConfig {
  double start_pct = 0;
  double end_pct = 100;
  double min_duration_us = 0;
  std::vector<std::string> categories{"kernel", "gpu"};
  std::vector<std::string> ignore_categories{"gpu_user_annotation", "user_annotation"};
  size_t top_k = 20;
};

// One kernel name's aggregate. Durations are kept so that merged ranks get
// exact medians.
struct KernelStats {
  std::string name;
  size_t calls = 0;
  double total_us = 0;
  std::vector<double> durations_us;
  std::vector<std::string> shapes;              // unique, first seen first, at most 10
  std::map<std::string, size_t> launching_ops;  // op name → calls
  void add(const KernelStats& other);
};

// What the reports print for a kernel; derived from KernelStats once.
struct KernelRow {
  std::string name;
  size_t calls = 0;
  double total_us = 0, avg_us = 0, median_us = 0, min_us = 0, max_us = 0, std_us = 0;
  double pct_total = 0, cumulative_pct = 0;
  std::string input_shapes;  // "; "-joined
  std::string launching_op;  // most frequent launching cpu_op ("" when unknown)
  sources::KernelName parsed;
};

// What a rank's trace holds besides the counted events, taken when nothing
// was counted: enough to say why a trace has no device events and what to do
// (gap_analysis_run.cpp's diagnosis).
struct TraceCensus {
  size_t device_rows = 0;      // kernels, copies, sets anywhere in the trace (outside the window too)
  size_t cpu_ops = 0;          // cpu_op rows
  size_t runtime_calls = 0;    // cuda_runtime / cuda_driver rows (HIP calls as well)
  size_t launch_calls = 0;     // of those, kernel and graph launches ("...Launch...")
  std::string launch_example;  // the first launch call's name, e.g. "cudaLaunchKernel"
  size_t profiler_ranges = 0;  // cuda_profiler_range rows: CUPTI's range profiler was on
  // Categories of no known kind whose name suggests another accelerator
  // ("mtia_ccp_events"), with their row counts, most first.
  std::vector<std::pair<std::string, size_t>> device_like_categories;
};

struct RankGapResult {
  int rank = 0;
  std::string trace_file;
  trace::RankSource rank_source = trace::RankSource::kOrder;
  int cycle = 0;   // profiling cycle of this rank (several files of one process)
  int cycles = 1;  // 1 = no cycles
  double total_duration_us = 0;  // sum of kept kernel durations (CPU events: self times)
  std::vector<KernelStats> kernels;  // sorted by total descending, untruncated
  size_t device_events = 0;  // counted kernel/copy/set rows
  size_t host_events = 0;    // counted CPU rows (--categories cpu_op ...): self time each
  TraceCensus census;        // filled when nothing was counted
  GpuTimeline timeline;
  trace::LinkSummary links;
  trace::IngestStats ingest;
  // The percentage window (start_pct/end_pct) in trace time; all when unset.
  TimeRange window_ns;
  // The rank's critical path, what-ifs and ranked fixes, over the iterations
  // inside the window (whole-window figures: the whole trace); absent without GPU work.
  std::optional<CriticalPathSummary> critical_path;
  std::vector<std::string> warnings;
};

struct SkippedTrace {
  std::string file;
  std::string kind;    // error kind, e.g. "bad_format"
  std::string reason;  // the full message
};

// What the time column measures: device events do not nest, so their time is
// their own; CPU events nest (an op and the ops it calls), so each counts its
// self time, exclusive of the counted events inside it.
enum class TimeBasis { kDevice, kHostSelf, kMixed };

struct GapAnalysisResult {
  GapAnalysisConfig config;
  // Set when the traces held no GPU activity at all and their cpu_op events
  // were ranked instead (the categories the user left at the default).
  std::string cpu_fallback_note;
  std::vector<RankGapResult> ranks;  // sorted by rank
  std::vector<KernelStats> merged;   // sorted by total descending, untruncated
  double total_duration_us = 0;
  std::vector<SkippedTrace> skipped;
  std::vector<std::string> warnings;
  gpu::EnvironmentSnapshot environment;  // where the analysis ran (no GPU used)
};

TimeBasis time_basis(const GapAnalysisResult& result);
// "Self CUDA total (us)" (Magpie's), "Self CPU total (us)" or "Self total (us)".
std::string_view total_time_column(TimeBasis basis);
std::string_view to_string(TimeBasis basis);  // "device", "host_self", "mixed"

RankGapResult analyze_rank(const trace::Trace& trace, const GapAnalysisConfig& config);
// Merges ranks by kernel name (Magpie: percentages against the sum over ranks).
void merge_ranks(GapAnalysisResult& result);
// Rows with percentages against `grand_total_us`, truncated to top_k.
std::vector<KernelRow> make_rows(const std::vector<KernelStats>& kernels, double grand_total_us,
                                 size_t top_k);

// "[[5, 2880], [2880, 201088], []]" → "[5,2880]x[2880,201088]" as Magpie prints shapes.
std::string format_input_dims(std::string_view input_dims_json);

}  // namespace magpie::analysis
