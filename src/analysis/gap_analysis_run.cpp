#include "analysis/gap_analysis_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <optional>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/phase_times.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {

namespace fs = std::filesystem;

GapAnalysisResult run_gap_analysis(const fs::path& trace_dir, const GapAnalysisRunOptions& options) {
  std::vector<fs::path> files = trace::discover_trace_files(trace_dir);
  GapAnalysisResult result;
  result.config = options.config;

  // Several files: one file per thread. One file: its chunks use all threads.
  unsigned threads = options.ingest.threads ? options.ingest.threads : default_thread_count();
  trace::IngestOptions per_file = options.ingest;
  per_file.threads = files.size() > 1 ? 1 : threads;

  std::vector<std::vector<trace::Trace>> traces(files.size());
  std::vector<std::optional<Error>> errors(files.size());
  parallel_for(files.size(), files.size() > 1 ? threads : 1, [&](size_t i) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      traces[i] = trace::load_trace_ranks(files[i], per_file);
    } catch (const Error& e) {
      errors[i] = e;
      return;
    } catch (const std::exception& e) {
      errors[i] = Error(ErrorKind::kInternal, e.what(), files[i].string());
      return;
    }
    if (options.progress) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      options.progress(fmt::format("loaded {} ({:.1f} MB JSON, {} events kept) in {:.2f} s",
                                   files[i].filename().string(),
                                   static_cast<double>(traces[i].front().stats.raw_bytes) / 1e6,
                                   traces[i].front().stats.events_kept, s));
    }
  });

  // One rule for a folder in every mode: a file that cannot be read is skipped
  // and listed; only when none can be read does the first error end the run.
  std::vector<trace::Trace*> loaded;
  std::optional<Error> first_error;
  for (size_t i = 0; i < files.size(); ++i) {
    if (errors[i]) {
      result.skipped.push_back({files[i].string(), to_string(errors[i]->kind()), errors[i]->what()});
      if (!first_error) first_error = errors[i];
    } else {
      for (auto& t : traces[i]) loaded.push_back(&t);
    }
  }
  if (loaded.empty()) throw *first_error;
  std::vector<trace::TraceOrigin> origins;
  for (const trace::Trace* t : loaded) origins.push_back(trace::origin_of(*t));
  const trace::RankPlan plan = trace::plan_ranks(origins);
  trace::apply_rank_plan(plan, loaded);
  for (const auto& w : plan.warnings) result.warnings.push_back(w);

  std::vector<RankGapResult> ranks(loaded.size());
  parallel_for(loaded.size(), threads, [&](size_t i) {
    ranks[i] = analyze_rank(*loaded[i], options.config);
    magpie_phase::mark("rank analysed");
    *loaded[i] = trace::Trace{};  // free the tables; the analysis keeps what it needs
  });
  for (auto& r : ranks) {
    if (r.kernels.empty()) {
      result.skipped.push_back({r.trace_file, to_string(ErrorKind::kNoGpuEvents),
                                r.trace_file + ": no events matched the category filter "
                                               "(no GPU kernels in the trace or window)"});
      continue;
    }
    result.ranks.push_back(std::move(r));
  }
  if (result.ranks.empty()) {
    std::string where = result.skipped.size() == 1 ? result.skipped.front().file : trace_dir.string();
    throw Error(ErrorKind::kNoGpuEvents,
                fmt::format("no GPU kernel events (device kernels, copies or sets) matched "
                            "(categories: {}) in {} trace(s)",
                            fmt::join(options.config.categories, ", "), result.skipped.size()),
                where, std::nullopt,
                "record the trace with ProfilerActivity.CUDA, or widen --categories / the "
                "--start-pct/--end-pct window");
  }
  magpie_phase::mark("ranks analysed");
  merge_ranks(result);
  magpie_phase::mark("ranks merged");
  gpu::EnvironmentRequest env;
  env.gpu_indices = std::vector<int>{};  // a trace analysis runs on the CPU
  result.environment = gpu::capture_environment(env);
  magpie_phase::mark("gap result ready");
  return result;
}

}  // namespace magpie::analysis
