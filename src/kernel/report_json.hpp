#pragma once
// analyze_report.json and compare_report.json in Magpie's structure
// (docs/MAGPIE_COMPATIBILITY.md §4), with our statistics in extra fields beside Magpie's.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpu/environment.hpp"
#include "gpu/gpu_monitor.hpp"
#include "gpu/gpu_selection.hpp"
#include "kernel/cupti_choice.hpp"
#include "kernel/gpu_info.hpp"
#include "kernel/evaluation.hpp"
#include "kernel/ranking.hpp"

namespace magpie::kernel {

// One EvaluationState (what MCP tools take, too).
nlohmann::json evaluation_state(const Evaluation& e);

// What every kernel report carries besides its results: the environment block
// (gpu/environment.hpp) and the GPU peaks the roofline floor used, with their source.
struct ReportEnvironment {
  gpu::EnvironmentSnapshot environment;
  GpuInfo gpu;
  // Written only when the kernel YAML asked for them.
  std::optional<gpu::GpuSelectionRecord> gpu_selection;
  std::optional<gpu::GpuMonitorSummary> gpu_monitor;
};

nlohmann::json analyze_report(const std::vector<Evaluation>& evals, const std::string& timestamp,
                              const ReportEnvironment* env = nullptr);

// `cupti`: the one CUPTI kind all implementations were timed with, and why.
nlohmann::json compare_report(const std::vector<Evaluation>& evals, const Ranking& ranking,
                              const VerdictSettings& settings, const CuptiChoice& cupti,
                              const std::string& timestamp, const ReportEnvironment* env = nullptr);

}  // namespace magpie::kernel
