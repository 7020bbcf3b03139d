#include "analysis/gap_analysis_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <optional>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/phase_times.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {

namespace fs = std::filesystem;

NoDeviceEvents explain_no_device_events(const RankGapResult& rank, const GapAnalysisConfig& config) {
  const TraceCensus& c = rank.census;
  const bool default_categories = config.categories == GapAnalysisConfig{}.categories;
  if (!default_categories) {
    return {NoDeviceEvents::kFilter,
            fmt::format("no events matched --categories {} (less --ignore-categories {})",
                        fmt::join(config.categories, " "), fmt::join(config.ignore_categories, " ")),
            "pass categories the trace holds (kernel, gpu_memcpy, gpu_memset, cpu_op, ...), or "
            "leave --categories at its default"};
  }
  if (c.device_rows > 0) {
    return {NoDeviceEvents::kWindow,
            fmt::format("the trace has {} GPU events, none inside the {:g}%-{:g}% window of at "
                        "least {:g} us",
                        c.device_rows, config.start_pct, config.end_pct, config.min_duration_us),
            "widen --start-pct/--end-pct or lower --min-duration-us"};
  }
  if (c.launch_calls > 0 && c.profiler_ranges > 0) {
    return {NoDeviceEvents::kRangeProfiler,
            fmt::format("the trace has {} kernel launches ({}...) and {} cuda_profiler_range "
                        "events but no kernel activity: it was recorded with CUPTI's range "
                        "profiler on, which records counters per range instead of kernels",
                        c.launch_calls, c.launch_example, c.profiler_ranges),
            "record again without experimental_config=_ExperimentalConfig(profiler_metrics=...), "
            "with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"};
  }
  if (c.launch_calls > 0) {
    return {NoDeviceEvents::kLostDeviceActivity,
            fmt::format("the trace has {} CUDA/HIP runtime calls, {} of them kernel launches "
                        "({}...), but no device events: the profiler lost the GPU side",
                        c.runtime_calls, c.launch_calls, c.launch_example),
            "the CPU side was recorded but CUPTI (ROCm: roctracer) delivered no activity: check "
            "that libcupti loads (LD_LIBRARY_PATH; PyTorch warns 'CUPTI initialization failed'), "
            "that profiling is permitted (ERR_NVGPUCTRPERM: run as root or load the driver with "
            "NVreg_RestrictProfilingToAdminUsers=0), and that the profiler is stopped before the "
            "trace is exported, so its activity buffers are flushed; then record again"};
  }
  if (!c.device_like_categories.empty()) {
    std::string listed;
    std::string device = c.device_like_categories.front().first;
    for (const auto& [name, n] : c.device_like_categories) {
      listed += fmt::format("{}{} ({} events)", listed.empty() ? "" : ", ", name, n);
      if (device.find("runtime") != std::string::npos && name.find("runtime") == std::string::npos)
        device = name;  // a device's own events rather than its host API calls
    }
    // Only an accelerator's own word says "another accelerator"; a plain "gpu"
    // category (a browser's Chrome trace has one) may be no device work at all.
    bool accelerator = false;
    for (const auto& [name, n] : c.device_like_categories)
      for (std::string_view w : {"mtia", "ccp", "xpu", "hpu", "npu", "tpu"})
        accelerator = accelerator || name.find(w) != std::string::npos;
    if (accelerator) {
      return {NoDeviceEvents::kOtherDevice,
              "no CUDA/HIP kernels; the trace's device work is in categories of another "
              "accelerator: " + listed,
              fmt::format("rank them with --categories {}", device)};
    }
    return {NoDeviceEvents::kOtherDevice,
            "no CUDA/HIP kernels; categories whose names suggest device work, from a profiler "
            "Magpie does not read (a browser's own 'gpu' category is not GPU kernels): " + listed,
            fmt::format("if these events are device work, rank them with --categories {}; for a "
                        "PyTorch run, record with activities=[ProfilerActivity.CPU, "
                        "ProfilerActivity.CUDA]",
                        device)};
  }
  if (c.cpu_ops > 0) {
    return {NoDeviceEvents::kCpuOnly,
            fmt::format("the trace is CPU-only: {} cpu_op events, no GPU activity and no kernel "
                        "launches",
                        c.cpu_ops),
            "record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] on a GPU run, "
            "or rank the CPU ops with --categories cpu_op"};
  }
  return {NoDeviceEvents::kEmpty,
          "the trace has neither GPU events nor CPU ops (only metadata or annotations)",
          "record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] and export after "
          "the profiled steps ran"};
}

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
  const std::atomic<bool>* cancel = options.ingest.cancel;
  parallel_for(files.size(), files.size() > 1 ? threads : 1, [&](size_t i) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      throw_if_cancelled(cancel, "gap analysis");
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

  // A cancelled read is no unreadable file: the run stops rather than skip it.
  throw_if_cancelled(cancel, "gap analysis");
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

  const bool may_fall_back =
      options.cpu_fallback && options.config.categories == GapAnalysisConfig{}.categories;
  std::vector<RankGapResult> ranks(loaded.size());
  parallel_for(loaded.size(), threads, [&](size_t i) {
    if (cancel && cancel->load()) return;  // thrown below, once every worker is back
    ranks[i] = analyze_rank(*loaded[i], options.config);
    if (!ranks[i].kernels.empty() && ranks[i].device_events > 0) {
      // On the tables already ingested (no re-parse); a few gain bounds keep it cheap.
      try {
        ranks[i].critical_path = summarize_critical_path(*loaded[i], trace::links_of(*loaded[i]), 5, 10, {},
                                                         ranks[i].window_ns);
      } catch (const std::exception& e) {
        ranks[i].warnings.push_back(std::string("critical path skipped: ") + e.what());
      }
    }
    magpie_phase::mark("rank analysed");
    // Free the tables (the analysis keeps what it needs), unless the trace may
    // be ranked again over its CPU ops below.
    if (!ranks[i].kernels.empty() || !may_fall_back) *loaded[i] = trace::Trace{};
  });
  throw_if_cancelled(cancel, "gap analysis");
  bool any_counted = false, all_cpu_only = may_fall_back;
  for (const auto& r : ranks) {
    any_counted = any_counted || !r.kernels.empty();
    all_cpu_only = all_cpu_only && r.kernels.empty() &&
                   explain_no_device_events(r, options.config).cause == NoDeviceEvents::kCpuOnly;
  }
  if (!any_counted && all_cpu_only) {
    // A CPU-only run (no device events, no kernel launches): its cpu_op events
    // still show where the time goes. A serving run on a CPU server and
    // --trace-dir on its traces rank them alike (README "Gap analysis").
    result.config.categories = {"cpu_op"};
    parallel_for(loaded.size(), threads, [&](size_t i) {
      ranks[i] = analyze_rank(*loaded[i], result.config);
      *loaded[i] = trace::Trace{};
    });
    result.cpu_fallback_note =
        "the traces hold no GPU activity and no kernel launches (a CPU-only run): ranked their "
        "cpu_op events by self time instead (record with ProfilerActivity.CUDA to rank GPU kernels)";
    result.warnings.push_back(result.cpu_fallback_note);
  }
  for (trace::Trace* t : loaded) *t = trace::Trace{};
  std::optional<NoDeviceEvents> strongest;
  for (auto& r : ranks) {
    if (r.kernels.empty()) {
      NoDeviceEvents why = explain_no_device_events(r, result.config);
      result.skipped.push_back({r.trace_file, to_string(ErrorKind::kNoGpuEvents),
                                r.trace_file + ": " + why.what + "; " + why.fix});
      if (!strongest || why.cause < strongest->cause) strongest = std::move(why);
      continue;
    }
    result.ranks.push_back(std::move(r));
  }
  if (result.ranks.empty()) {
    std::string where = result.skipped.size() == 1 ? result.skipped.front().file : trace_dir.string();
    throw Error(ErrorKind::kNoGpuEvents,
                result.skipped.size() == 1
                    ? strongest->what
                    : fmt::format("none of {} traces has events to rank; {}", result.skipped.size(),
                                  strongest->what),
                where, std::nullopt, strongest->fix);
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
