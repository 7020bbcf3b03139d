#pragma once
// Optimization advice (the MCP tool `suggest_optimizations`): reads what
// Magpie measured — one analyze result, a TraceLens kernel-roofline table, or
// a gap-analysis report — finds bottlenecks by fixed, documented rules, ranks
// them by severity and says what to try. Every bottleneck carries the figure
// that triggered it. Rules, thresholds and why: docs/SUGGESTIONS.md.
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::advice {

enum class BottleneckKind {
  kMemoryBound,
  kComputeBound,
  kLaunchBound,  // many short kernels: launch overhead leaves the GPU waiting
  kExposedCommunication,
  kIdleGpu,
  kLowOccupancyOrLatency,  // far below both roofs
  kCorrectnessFailure,
  kNoData,
};

// "memory_bound", "compute_bound", "launch_bound", "exposed_communication",
// "idle_gpu", "low_occupancy_or_latency", "correctness_failure", "no_data".
std::string_view to_string(BottleneckKind kind);

struct Bottleneck {
  BottleneckKind kind;
  std::string subject;  // kernel or op name, "rank 0", "compile", ...
  double severity = 0;  // 0–1: the estimated share of the measured time at stake; ranks bottlenecks
  std::string evidence;                   // the figure that triggered it, in words
  std::map<std::string, double> figures;  // the same figures as numbers
};

struct Suggestion {
  std::string title;
  std::string detail;
  std::string applies_to;  // the bottleneck's subject
  int priority = 0;        // 1 = do first; the rank of the bottleneck it answers
  // From a critical path (gap_analysis.json's ranks[].critical_path, or
  // critical_path.json from `magpie whatif` / the MCP tool whatif): the kind
  // of fix ("launch", "sync", "cpu", "kernel") and its predicted end-to-end gain.
  std::string kind;
  std::optional<double> predicted_gain_us, predicted_gain_pct;
};

struct Advice {
  std::string kernel_id;     // analyze: extra.kernel_id; tracelens: the stage label; gap: ""
  double overall_score = 1;  // analyze: the result's score; otherwise 1 − the top severity
  std::vector<Bottleneck> bottlenecks;  // most severe first
  std::vector<Suggestion> suggestions;  // by priority
  std::string summary;
  std::string source_kind;  // analyze_result | tracelens_report | gap_report | critical_path
};

// Accepts one EvaluationState (an entry of analyze_report.json's `results` or
// compare_report.json's `results.kernel_results`), a TraceLens roofline row set
// (a JSON array of *_kernel_roofline_simple.csv rows keyed by column name, or
// {"rows": [...], "gpu_arch": "H200"}), or a gap_analysis.json block (also
// benchmark_report.json, whose `gap_analysis` block is used), or a
// critical_path.json (magpie whatif). With a critical path (gap reports carry
// one per rank) the suggestions start with its fixes ranked by predicted
// end-to-end gain: a host fix first on a launch-/CPU-/sync-bound trace, the
// op whose GPU work buys most on a GPU-bound one. Throws
// Error(kBadFormat) for anything else — for a whole analyze/compare report,
// saying to pass one entry of `results`.
Advice suggest_optimizations(const nlohmann::json& analysis_result);

// A *_kernel_roofline_simple.csv written by `magpie tracelens`. The stage's
// gpu_timeline.csv (in the `<label>/` folder beside it) adds the idle and
// exposed-communication rules when present; tracelens_manifest.json names the
// GPU for ridge points. Throws Error(kNotFound) / Error(kBadFormat).
Advice suggest_from_roofline_csv(const std::filesystem::path& csv);

// The MCP tool's answer: {kernel_id, overall_score, bottlenecks, suggestions, summary,
// source_kind}.
nlohmann::json to_json(const Advice& advice);

}  // namespace magpie::advice
