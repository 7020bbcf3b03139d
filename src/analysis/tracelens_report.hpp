#pragma once
// `magpie tracelens` as a library call, shared with the serving benchmark's
// profiler.tracelens section: load the rank-0 trace (and graph-capture traces),
// split it into stages, model and roofline every op, and write the reports
// under DIR/tracelens/ with a manifest shaped like Magpie's
// benchmark_report.json.tracelens_analysis (MAGPIE_INTERFACE.md §6).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/step_annotation.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::analysis {

struct TraceLensOptions {
  std::filesystem::path trace;     // a trace file, or a directory holding the rank traces
  std::string mode = "inference";  // "inference" | "pytorch"
  std::vector<Stage> stages;       // inference mode; empty = all three
  bool write_csv = true;
  bool write_excel = false;
  std::string gpu_arch;                   // --gpu-arch NAME; overrides deviceProperties
  std::filesystem::path gpu_arch_file;    // --gpu-arch-file: overrides/extends the table
  std::filesystem::path capture_dir;      // graph-capture traces (vLLM capture_traces/)
  std::optional<int64_t> isl, osl, conc;  // only name the compact CSV
  std::filesystem::path output_dir;       // reports go to output_dir/tracelens
  trace::IngestOptions ingest;
  std::function<void(const std::string&)> progress;
};

// Writes the reports and DIR/tracelens/tracelens_manifest.json, and returns the
// manifest. Problems with the input that still allow some report are listed
// in its "warnings"/"errors"; a missing or unreadable trace, a bad
// --gpu-arch-file or an unknown --gpu-arch throws magpie::Error.
nlohmann::json run_tracelens(const TraceLensOptions& options);

// "1024" → "1024", "0.5" → "0p5", missing → "unknown" (Magpie's file naming).
std::string summary_file_value(const std::optional<int64_t>& v);

}  // namespace magpie::analysis
