#pragma once
// Writers for gap analysis: gap_analysis.csv (Magpie's columns first),
// gap_analysis_rank<N>.csv, gap_analysis.json (benchmark_report's
// `gap_analysis` block plus ours) and the console summary.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/gap_analysis.hpp"

namespace magpie::analysis {

struct SourceSearchOptions {
  bool enabled = false;
  std::vector<std::filesystem::path> repos;
};

struct GapReportFiles {
  std::filesystem::path output_dir;
  std::filesystem::path csv;
  std::vector<std::filesystem::path> rank_csvs;
  std::filesystem::path json;
  std::filesystem::path critical_path_csv;  // empty when no rank has GPU work
  // With --find-kernel-sources: "$VLLM" -> "/src/vllm", as the source columns spell paths.
  std::vector<std::pair<std::string, std::string>> repo_path_mappings;
};

// Each `--trace-dir` run writes into a folder of its own,
// <output_dir>/gap_analysis_<YYYYmmdd_HHMMSS> (local time; _2, _3... when one
// second holds several runs), claimed atomically, so a later run never
// overwrites the files an earlier run's results-store row points at.
std::filesystem::path make_gap_run_dir(const std::filesystem::path& output_dir);

// A real folder that was at <output_dir>/gap_analysis (an older Magpie wrote
// every run there) and where it was moved to.
struct MovedGapFolder {
  std::filesystem::path from;  // absolute and canonical, as it was before the move
  std::filesystem::path to;
};

// Points <output_dir>/gap_analysis, a relative symlink, at `run_dir` (a folder
// in output_dir), replacing the previous link by rename(2): scripts reading
// <output_dir>/gap_analysis/gap_analysis.csv always see one whole run, the
// newest to finish. A real folder in the way is first moved to a run folder
// of its own (returned, so the caller can repoint its results-store rows).
std::optional<MovedGapFolder> link_latest_gap_run(const std::filesystem::path& output_dir,
                                                  const std::filesystem::path& run_dir);

// Writes every file atomically under `output_dir` (created if needed).
// `no_rank_csv` skips the per-rank CSVs.
GapReportFiles write_gap_reports(const GapAnalysisResult& result,
                                 const std::filesystem::path& output_dir, bool no_rank_csv,
                                 const SourceSearchOptions& sources);

// The `gap_analysis` block of benchmark_report.json.
nlohmann::json gap_analysis_json(const GapAnalysisResult& result, const GapReportFiles& files);

// Magpie's console summary (docs/MAGPIE_COMPATIBILITY.md §1), without the warnings.
std::string gap_console_summary(const GapAnalysisResult& result, const GapReportFiles& files);

}  // namespace magpie::analysis
