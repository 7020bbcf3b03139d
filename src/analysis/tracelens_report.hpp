#pragma once
// `magpie tracelens` as a library call, shared with the serving benchmark's
// profiler.tracelens section: load the rank-0 trace (and graph-capture traces),
// split it into stages, model and roofline every op, and write the reports
// under DIR/tracelens/ with a manifest shaped like Magpie's
// benchmark_report.json.tracelens_analysis (docs/MAGPIE_COMPATIBILITY.md §6).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/gap_analysis.hpp"
#include "analysis/graph_capture_alignment.hpp"
#include "analysis/step_annotation.hpp"
#include "gpu/environment.hpp"
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
  // Per-stage (inference) or per-rank (pytorch) perf report tables; false
  // writes only the compact summary, the collective report and the manifest.
  bool perf_report = true;
  // The multi-rank collective report (tracelens/collective_report/). Pytorch
  // mode: over every rank trace; inference mode: over every trace in the folder.
  // Unset: on in pytorch mode, off in inference mode (it loads every rank).
  std::optional<bool> collective_report;
  // Inference mode: at most this many iterations of each stage (the last
  // ones, after warm-up) are candidates for its steady-state pick; 0 = all.
  size_t num_steps = 0;
  trace::IngestOptions ingest;
  std::function<void(const std::string&)> progress;
};

// The iteration chosen to stand for one stage, and why.
struct TraceLensPhasePick {
  Stage stage = Stage::kDecode;
  double batch_size = 0;
  std::string trace_path;
  size_t num_gpu_events = 0;
  double gpu_duration_us = 0;
  double gpu_busy_us = 0;
  std::string selection_reason;
  size_t candidates = 0;
  std::string marker;
  std::string stage_source;
  int64_t start_ns = 0, end_ns = 0;
};

struct TraceLensStageResult {
  Stage stage = Stage::kDecode;
  // The manifest's key and the file label: the stage's ("decode", "decode_only"),
  // or "whole_trace" for the whole trace when no iteration has a stage.
  std::string key, label;
  std::string trace_path;
  std::filesystem::path output_dir;
  std::vector<std::string> files;
  std::string simple_summary_file;
  std::optional<std::string> error;  // first writer error, when any
  TraceLensPhasePick pick;
  size_t gpu_events = 0;
  double kernel_time_us = 0;
  size_t ops = 0;
  size_t unattributed_events = 0;
  size_t graph_events = 0;
  size_t graph_events_attributed = 0;
};

// How graph-replayed kernels were matched to the capture traces' launches.
struct TraceLensGraphAttribution {
  std::filesystem::path capture_dir;
  std::vector<std::string> capture_traces;
  size_t captured_launches = 0;
  size_t graph_launches = 0;
  size_t graph_kernels = 0;
  size_t attributed_kernels = 0;
  size_t attributed_to_op = 0;
  double coverage_pct = 0;
  size_t captured_graphs = 0;  // capture windows of unnamed (CUDA) launches
  std::vector<GraphReplaySummary>
      graphs;  // per captured graph: method, counts, why anything was left
};

// The collective report's outcome.
struct TraceLensCollectiveSummary {
  size_t ranks = 0;
  size_t collective_kernels = 0;
  size_t rows = 0;  // collective type × size rows across ranks
  std::vector<std::string> files;
};

// One trace that was analysed, and which rank (and profiling cycle) it is.
struct TraceLensRank {
  int rank = 0;
  std::string source;  // "trace", "process name", "file name", "order"
  int cycle = 0;
  int cycles = 1;
  std::string file;
};

// What `magpie tracelens` found and wrote. Inference mode fills the stage
// fields; pytorch mode fills num_ranks and export_format.
struct TraceLensResult {
  std::string mode;  // "inference" | "pytorch"
  std::vector<Stage> stages;
  std::string trace_dir;
  std::string rank0_trace;
  std::optional<std::string> gpu_arch_platform;
  std::string gpu_arch_reason;
  std::optional<TraceLensGraphAttribution> graph_attribution;
  std::optional<TraceLensCollectiveSummary> collective_report;
  std::string split_method;
  std::map<std::string, int> iterations;  // stage name → iterations found
  std::vector<TraceLensStageResult> stage_results;
  size_t num_ranks = 0;
  std::vector<TraceLensRank> ranks;     // every trace analysed (inference: the rank-0 one)
  std::vector<SkippedTrace> skipped;    // unreadable files of a folder, with the reason
  std::string export_format;
  std::vector<std::string> output_files;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  double load_s = 0, analyse_s = 0, total_s = 0;
  std::filesystem::path manifest;  // DIR/tracelens/tracelens_manifest.json
  gpu::EnvironmentSnapshot environment;  // where the analysis ran (no GPU used)
};

// Writes the reports and DIR/tracelens/tracelens_manifest.json. Problems with
// the input that still allow some report are listed in warnings/errors; a
// missing or unreadable trace, a bad --gpu-arch-file or an unknown
// --gpu-arch throws magpie::Error.
TraceLensResult run_tracelens(const TraceLensOptions& options);

// The manifest: Magpie's benchmark_report.json `tracelens_analysis` block
// (inference or pytorch mode) plus ours (split method, timings, graph
// attribution, per-stage summaries).
nlohmann::json tracelens_manifest_json(const TraceLensResult& result);

// "1024" → "1024", "0.5" → "0p5", missing → "unknown" (Magpie's file naming).
std::string summary_file_value(const std::optional<int64_t>& v);

}  // namespace magpie::analysis
