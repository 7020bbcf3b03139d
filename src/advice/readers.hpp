#pragma once
// Reads the three inputs of the advice rules into observations: an analyze
// result (EvaluationState), a gap_analysis.json block, and TraceLens
// kernel-roofline rows (JSON or the CSV file). Parsing happens here once.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "advice/observations.hpp"

namespace magpie::advice {

struct AnalyzeInput {
  std::string kernel_id;
  std::optional<double> score;
  CorrectnessObservation correctness;
  std::string performance_state;
  std::vector<std::string> performance_errors;
  RooflineObservation roofline;     // the whole kernel (time_share 1)
  std::optional<double> median_us;  // one measured call
};
AnalyzeInput read_analyze_result(const nlohmann::json& state);

struct GapInput {
  std::vector<TimelineObservation> timelines;  // one per rank
  LaunchObservation launches;
  std::vector<HotKernel> hot_kernels;
};
GapInput read_gap_report(const nlohmann::json& block);

struct RooflineRowsInput {
  std::string stage;
  std::vector<RooflineObservation> rows;  // with peaks filled where they could be derived
  LaunchObservation launches;
  std::optional<TimelineObservation> timeline;
  size_t rows_without_model = 0;
};
// A JSON array of rows keyed by the CSV's column names (numbers or their text).
// `gpu_arch` (e.g. "H200") supplies peaks the rows cannot.
RooflineRowsInput read_roofline_rows(const nlohmann::json& rows, const std::string& gpu_arch = {});
// The CSV file, plus `<label>/gpu_timeline.csv` and tracelens_manifest.json beside it when present.
RooflineRowsInput read_roofline_csv(const std::filesystem::path& csv);

}  // namespace magpie::advice
