#pragma once
// compare_benchmark_reports: the one call behind the MCP tool of that name and
// `magpie results diff --ops`. Given two or more workspaces it writes, into
// output_dir, the metric diff (report_diff.{csv,json}) when the workspaces are
// serving benchmarks or kernel compares, and the op/kernel side-by-side
// (op_comparison.csv) when each has a gap analysis or TraceLens tables.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/op_table_compare.hpp"
#include "store/report_diff.hpp"

namespace magpie::store {

struct CompareReportsRequest {
  std::vector<std::filesystem::path> workspace_dirs;  // [0] is the baseline
  std::vector<std::string> labels;                    // optional, one per workspace
  std::filesystem::path output_dir;
  std::string export_format = "csv";  // csv | json | both
  DiffSettings settings;
};

struct CompareReportsResult {
  std::optional<ReportDiff> diff;            // serving or kernel workspaces
  std::optional<OpTableComparison> ops;      // workspaces with op tables
  std::vector<std::filesystem::path> files;  // written, in order
  std::vector<std::string> notes;            // why a part was skipped
};

// Throws Error(kUsage) for bad arguments (fewer than two workspaces, labels
// not matching, unknown export_format), kNotFound when there is nothing to
// compare. Files are written atomically.
CompareReportsResult compare_benchmark_reports(const CompareReportsRequest& request);

}  // namespace magpie::store
