#pragma once
// Gap analysis (Magpie-compatible, docs/MAGPIE_COMPATIBILITY.md §5): which GPU kernels cost the
// most, per rank and merged over ranks, plus each rank's GPU timeline.
#include <map>
#include <string>
#include <vector>

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

struct RankGapResult {
  int rank = 0;
  std::string trace_file;
  trace::RankSource rank_source = trace::RankSource::kOrder;
  int cycle = 0;   // profiling cycle of this rank (several files of one process)
  int cycles = 1;  // 1 = no cycles
  double total_duration_us = 0;  // sum of kept kernel durations
  std::vector<KernelStats> kernels;  // sorted by total descending, untruncated
  GpuTimeline timeline;
  trace::LinkSummary links;
  trace::IngestStats ingest;
  std::vector<std::string> warnings;
};

struct SkippedTrace {
  std::string file;
  std::string kind;    // error kind, e.g. "bad_format"
  std::string reason;  // the full message
};

struct GapAnalysisResult {
  GapAnalysisConfig config;
  std::vector<RankGapResult> ranks;  // sorted by rank
  std::vector<KernelStats> merged;   // sorted by total descending, untruncated
  double total_duration_us = 0;
  std::vector<SkippedTrace> skipped;
  std::vector<std::string> warnings;
  gpu::EnvironmentSnapshot environment;  // where the analysis ran (no GPU used)
};

RankGapResult analyze_rank(const trace::Trace& trace, const GapAnalysisConfig& config);
// Merges ranks by kernel name (Magpie: percentages against the sum over ranks).
void merge_ranks(GapAnalysisResult& result);
// Rows with percentages against `grand_total_us`, truncated to top_k.
std::vector<KernelRow> make_rows(const std::vector<KernelStats>& kernels, double grand_total_us,
                                 size_t top_k);

// "[[5, 2880], [2880, 201088], []]" → "[5,2880]x[2880,201088]" as Magpie prints shapes.
std::string format_input_dims(std::string_view input_dims_json);

}  // namespace magpie::analysis
