#pragma once
// Reading finished workspaces back into results rows: which folders are
// workspaces, what kind, and the key metrics of their report files. The CLI
// and MCP faces use metrics_from_report too, so a recorded run and an imported
// one carry the same metric names.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/results_store.hpp"

namespace magpie::store {

// The workspace kind of a folder, from its name and report files:
// analyze_* (analyze_report.json), compare_* (compare_report.json),
// benchmark_* (benchmark_report.json), gap_analysis (gap_analysis.json),
// tracelens (tracelens_manifest.json). nullopt for anything else.
std::optional<RunKind> workspace_kind(const std::filesystem::path& dir);

// `dir` itself when it is a workspace, else its direct children that are (a
// gap_analysis/ or tracelens/ inside a benchmark_* workspace belongs to that
// benchmark and is not listed separately). Sorted by path.
std::vector<std::filesystem::path> find_workspaces(const std::filesystem::path& dir);

// A finished run read from a workspace's report (status, error, metrics, times
// from the report file's modification time); nullopt when the report is
// missing or unreadable.
std::optional<RunRecord> read_workspace(const std::filesystem::path& dir);

// Key metrics of a report, by kind, named as src/jobs records them:
//   benchmark     request_throughput, output_throughput, total_token_throughput,
//                 completed_requests, failed_requests, duration_seconds,
//                 {ttft,tpot,itl,e2el}.{mean_ms,median_ms,p99_ms}, execution_time_s
//   analyze       <kernel_id>.median_ns, <kernel_id>.score, all_correct
//   compare       as analyze, plus <kernel_id>.speedup, winner_index
//   gap_analysis  total_duration_us, num_ranks, skipped_files, top_kernels
//   tracelens     stages, <stage>_kernel_time_us, errors, seconds, output_files
std::map<std::string, double> metrics_from_report(RunKind kind, const nlohmann::json& report);

}  // namespace magpie::store
