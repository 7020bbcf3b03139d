#include "core/phase_times.hpp"
#include "jobs/trace_jobs.hpp"

#include <fmt/format.h>

#include <chrono>

#include "analysis/gap_analysis_run.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "jobs/run_recorder.hpp"
#include "store/results_store.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::jobs {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void validate(const GapAnalysisRequest& r) {
  const auto& c = r.config;
  if (c.start_pct < 0 || c.end_pct > 100 || c.start_pct >= c.end_pct) {
    throw Error(ErrorKind::kUsage,
                fmt::format("start_pct ({}) must be below end_pct ({}), both within 0..100",
                            c.start_pct, c.end_pct),
                "", std::nullopt, "e.g. --start-pct 10 --end-pct 90");
  }
  if (c.top_k == 0) throw Error(ErrorKind::kUsage, "top_k must be at least 1");
  if (c.min_duration_us < 0) throw Error(ErrorKind::kUsage, "min_duration_us must not be negative");
  if (r.sources.enabled && r.sources.repos.empty()) {
    throw Error(ErrorKind::kUsage, "--find-kernel-sources needs --kernel-source-repos PATH...", "",
                std::nullopt, "pass local checkouts, e.g. --kernel-source-repos ~/src/vllm");
  }
  for (const auto& repo : r.sources.repos) {
    if (!fs::is_directory(repo)) {
      throw Error(ErrorKind::kNotFound, "kernel source repository is not a directory",
                  repo.string(), std::nullopt, "pass a local checkout");
    }
  }
}

// Lines of progress from the analysis become numbered progress events.
std::function<void(const std::string&)> progress_lines(const JobContext& context) {
  if (!context.progress) return {};
  auto count = std::make_shared<std::atomic<int>>(0);
  return [&context, count](const std::string& line) { context.report(++*count, std::nullopt, line); };
}

// Rows recorded at an older Magpie's fixed gap_analysis/ folder follow its files
// to the run folder they were moved to.
void repoint_runs(const JobContext& context, const analysis::MovedGapFolder& moved,
                  std::vector<std::string>& warnings) {
  warnings.push_back(fmt::format("{} held an earlier run's reports; moved them to {}",
                                 moved.from.string(), moved.to.string()));
  if (!context.record) return;
  try {
    auto db = store::ResultsStore::open(context.store_path.empty() ? store::ResultsStore::default_path()
                                                                   : context.store_path);
    db.move_workspace(moved.from, moved.to);
  } catch (const std::exception& e) {
    warnings.push_back(std::string("results store: ") + e.what());
  }
}

}  // namespace

GapAnalysisOutcome run_gap_analysis(const GapAnalysisRequest& request, const JobContext& context) {
  // No workspace until the run has reports to write: a failed run wrote none.
  RunRecorder recorder(context, RunKind::kGapAnalysis, {});
  return recorder.run([&] {
    validate(request);
    const auto t0 = std::chrono::steady_clock::now();
    analysis::GapAnalysisRunOptions options;
    options.config = request.config;
    options.ingest = request.ingest;
    options.ingest.cancel = context.cancel;  // checked per file, per chunk of text, per rank
    options.progress = progress_lines(context);
    options.cpu_fallback = true;  // as a profiled serving run of a CPU server does
    GapAnalysisOutcome out;
    out.result = analysis::run_gap_analysis(request.trace_dir, options);
    throw_if_cancelled(context.cancel, "gap analysis");  // before any report is written
    // Each run in a folder of its own (the store points at it); gap_analysis
    // is a link to the newest, the path Magpie's users' scripts read.
    const fs::path run_dir = analysis::make_gap_run_dir(request.output_dir);
    recorder.workspace(run_dir);
    out.files = analysis::write_gap_reports(out.result, run_dir, !request.rank_csv, request.sources);
    try {
      if (auto moved = analysis::link_latest_gap_run(request.output_dir, run_dir))
        repoint_runs(context, *moved, out.result.warnings);
    } catch (const std::exception& e) {
      out.result.warnings.push_back(fmt::format(
          "could not point {} at this run ({}); its reports are in {}",
          (request.output_dir / "gap_analysis").string(), e.what(), run_dir.string()));
    }
    magpie_phase::mark("reports written");
    out.seconds = seconds_since(t0);
    out.run_id = recorder.id();
    recorder.metric("total_duration_us", out.result.total_duration_us);
    recorder.metric("num_ranks", static_cast<double>(out.result.ranks.size()));
    recorder.metric("skipped_files", static_cast<double>(out.result.skipped.size()));
    recorder.metric("seconds", out.seconds);
    return out;
  });
}

nlohmann::json report_json(const GapAnalysisOutcome& outcome) {
  return analysis::gap_analysis_json(outcome.result, outcome.files);
}

std::vector<std::string> warnings(const GapAnalysisOutcome& outcome) {
  std::vector<std::string> out = outcome.result.warnings;
  for (const auto& r : outcome.result.ranks) out.insert(out.end(), r.warnings.begin(), r.warnings.end());
  for (const auto& s : outcome.result.skipped) out.push_back("skipped " + s.reason);
  return out;
}

std::string console_text(const GapAnalysisOutcome& outcome) {
  return analysis::gap_console_summary(outcome.result, outcome.files);
}

TraceLensOutcome run_tracelens(const analysis::TraceLensOptions& request, const JobContext& context) {
  RunRecorder recorder(context, RunKind::kTraceLens, request.output_dir / "tracelens");
  return recorder.run([&] {
    analysis::TraceLensOptions options = request;
    options.progress = progress_lines(context);
    options.ingest.cancel = context.cancel;
    TraceLensOutcome out;
    out.result = analysis::run_tracelens(options);
    out.run_id = recorder.id();
    recorder.metric("stages", static_cast<double>(out.result.stage_results.size()));
    recorder.metric("errors", static_cast<double>(out.result.errors.size()));
    recorder.metric("seconds", out.result.total_s);
    for (const auto& s : out.result.stage_results)
      recorder.metric(s.key + "_kernel_time_us", s.kernel_time_us);
    if (!out.result.errors.empty()) recorder.fail(out.result.errors.front());
    return out;
  });
}

LoadedTrace load_trace(const fs::path& path, const trace::IngestOptions& ingest, const JobContext& context) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw Error(ErrorKind::kUsage, "load_trace reads one trace file, not a folder", path.string(),
                std::nullopt, "pass one of its files, or run gap_analysis over the folder");
  }
  context.report(0, 1, "reading " + path.string());
  LoadedTrace out;
  trace::IngestOptions cancellable = ingest;
  cancellable.cancel = context.cancel;
  out.trace = trace::load_trace(path, cancellable);
  throw_if_cancelled(context.cancel, "load_trace");
  // The whole trace (no window), as gap analysis computes each rank's timeline.
  out.timeline = analysis::analyze_rank(out.trace, analysis::GapAnalysisConfig{}).timeline;
  context.report(1, 1, "read " + path.string());
  return out;
}

nlohmann::json report_json(const TraceLensOutcome& outcome) {
  return analysis::tracelens_manifest_json(outcome.result);
}

std::string console_text(const TraceLensOutcome& outcome) {
  const auto& r = outcome.result;
  std::string text;
  if (r.mode == "inference") {
    text += fmt::format("TraceLens report (inference mode, split: {}, GPU: {})\n", r.split_method,
                        r.gpu_arch_platform.value_or("unknown"));
    for (const auto& s : r.stage_results) {
      text += fmt::format("  {:<14} batch {:g}, {} GPU events, {:.1f} us busy -> {}\n",
                          s.key, s.pick.batch_size, s.pick.num_gpu_events,
                          s.pick.gpu_busy_us, s.simple_summary_file);
    }
    if (r.graph_attribution) {
      const auto& g = *r.graph_attribution;
      text += fmt::format("  graph kernels attributed: {} of {} ({:.1f}%)\n", g.attributed_kernels,
                          g.graph_kernels, g.coverage_pct);
    }
  } else {
    text += fmt::format("TraceLens report (pytorch mode, {} rank(s), {} file(s))\n", r.num_ranks,
                        r.output_files.size());
  }
  text += "Output: " + r.manifest.parent_path().string() + "\n";
  return text;
}

}  // namespace magpie::jobs
