#pragma once
// Writers for gap analysis: gap_analysis.csv (Magpie's columns first),
// gap_analysis_rank<N>.csv, gap_analysis.json (benchmark_report's
// `gap_analysis` block plus ours) and the console summary.
#include <filesystem>
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
};

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
