#include "jobs/kernel_jobs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "core/config_keys.hpp"
#include "core/verdict.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "gpu/gpu_run_json.hpp"
#include "jobs/run_recorder.hpp"
#include "kernel/command.hpp"
#include "kernel/evaluator.hpp"
#include "kernel/markdown_table.hpp"
#include "kernel/performance_rounds.hpp"
#include "kernel/report_json.hpp"
#include "kernel/workspace.hpp"

namespace magpie::jobs {

namespace fs = std::filesystem;
using namespace magpie::kernel;

int KernelEvaluationOutcome::exit_code() const {
  if (!all_correct || cancelled) return 1;
  if (regression) return 1;
  return performance_not_measured.empty() ? 0 : kExitPerformanceNotMeasured;
}

KernelEvaluationRequest with_absolute_paths(KernelEvaluationRequest r, const fs::path& caller_dir) {
  auto absolute = [&caller_dir](const fs::path& p) {
    return p.empty() || p.is_absolute() ? p : (caller_dir / p).lexically_normal();
  };
  r.output_dir = absolute(r.output_dir);
  if (!r.sources.kernel_config.empty()) r.sources.kernel_config = absolute(r.sources.kernel_config).string();
  if (!r.sources.working_dir.empty()) r.sources.working_dir = absolute(r.sources.working_dir).string();
  for (auto& f : r.sources.files) f = absolute(f).string();
  return r;
}

std::string why_timing_cannot_run(const GpuInfo& gpu, const std::string& why_no_gpu,
                                  const std::vector<KernelSpec>& kernels) {
  if (!gpu.vendor.empty()) return "";
  auto timed_on_gpu = [](const KernelSpec& k) {
    if (!k.prof_command.empty()) return false;  // the user's own profiler knows what it needs
    return is_python_type(k.type) ? !k.bench_target.empty() : true;
  };
  auto it = std::find_if(kernels.begin(), kernels.end(), timed_on_gpu);
  if (it == kernels.end()) return "";
  return fmt::format("no GPU found ({}): timing {} needs one", why_no_gpu.empty() ? "the driver reports none" : why_no_gpu,
                     is_python_type(it->type) ? "with the Python harness"
                     : it->type == KernelType::kHip ? "HIP code"
                                                     : "CUDA code");
}

KernelConfig resolve_kernel_config(const KernelEvaluationRequest& request, const GpuInfo& gpu) {
  const KernelSources& src = request.sources;
  const char* mode = request.compare ? "compare" : "analyze";
  if (!src.kernel_config.empty() && !src.files.empty()) {
    throw Error(ErrorKind::kUsage, "give kernel files or a kernel config, not both", "", std::nullopt,
                fmt::format("e.g. magpie {} -k kernel.yaml", mode));
  }
  if (!request.compare && src.kernel_config.empty() && src.testcases.empty() && !src.files.empty()) {
    throw Error(ErrorKind::kRejected, "--testcase is required for analyze mode", "", std::nullopt,
                "pass the command that runs and checks the kernel, e.g. --testcase './test'");
  }
  if (src.testcases.size() > 1 && src.testcases.size() != src.files.size()) {
    throw Error(ErrorKind::kUsage,
                fmt::format("{} testcase commands for {} kernel files", src.testcases.size(),
                            src.files.size()),
                "", std::nullopt, "give one testcase for all files, or one per file in the same order");
  }
  KernelConfig cfg;
  if (!src.kernel_config.empty()) {
    cfg = load_kernel_config(src.kernel_config, magpie_lookup(gpu, {}));
    reject_unknown_keys(cfg.unknown_keys, request.strict, src.kernel_config);
  }
  const KernelType type = parse_kernel_type(src.type);
  for (size_t i = 0; i < src.files.size(); ++i) {
    fs::path p = fs::absolute(src.files[i]).lexically_normal();
    if (!fs::exists(p)) {
      throw Error(ErrorKind::kNotFound, "kernel file not found", p.string(), std::nullopt, "check the path");
    }
    KernelSpec k;
    k.id = request.compare ? fmt::format("kernel_{}_{}", i, p.stem().string()) : p.stem().string();
    k.type = type;
    k.source_files = {p};
    k.working_dir = src.working_dir.empty() ? p.parent_path() : fs::absolute(src.working_dir);
    if (src.testcases.size() > 1) k.testcase_command = {split_command(src.testcases[i])};
    cfg.kernels.push_back(std::move(k));
  }
  for (auto& k : cfg.kernels) {
    if (k.testcase_command.empty() && src.testcases.size() == 1)
      k.testcase_command = {split_command(src.testcases.front())};
    if (k.compile_command.empty() && !src.compile_command.empty())
      k.compile_command = {split_command(src.compile_command)};
    if (k.bench_target.empty() && is_python_type(k.type)) k.bench_target = cfg.latency.bench_target;
  }
  const KernelOverrides& o = request.overrides;
  if (o.rounds > 0) {
    cfg.performance.rounds = o.rounds;
    cfg.performance.rounds_exact = true;
  }
  if (o.threshold >= 0) cfg.performance.threshold = o.threshold;
  if (o.ncu) cfg.performance.ncu_pass = true;
  if (!o.cupti_kind.empty()) cfg.performance.cupti_kind = o.cupti_kind;
  if (!o.kernel_filter.empty()) cfg.latency.kernel_filter = o.kernel_filter;
  cfg.latency.method = o.latency_method;
  if (o.latency_rep_ms > 0) cfg.latency.rep_ms = o.latency_rep_ms;
  if (o.latency_method == "none") cfg.latency.enabled = false;

  if (cfg.kernels.empty()) {
    throw Error(ErrorKind::kRejected, "no kernels given", "", std::nullopt,
                fmt::format("pass kernel files or -k kernel.yaml (magpie {} --help)", mode));
  }
  if (request.compare && cfg.kernels.size() < 2) {
    throw Error(ErrorKind::kRejected, "compare needs at least 2 kernels", "", std::nullopt,
                "pass two or more implementations; the first is the baseline unless --baseline N");
  }
  if (request.compare && request.baseline >= cfg.kernels.size()) {
    throw Error(ErrorKind::kUsage, fmt::format("baseline {} is out of range (0..{})", request.baseline,
                                               cfg.kernels.size() - 1));
  }
  return cfg;
}

namespace {

// gpu_selection for a kernel run: picks and locks the GPUs, fills the record
// and the children's environment, and points out.gpu at the chosen GPU.
// Without a GPU on this machine it records why and the run carries on; a
// request that cannot be met on a machine with GPUs is an error.
std::optional<gpu::LockedGpus> select_gpus_for_run(const KernelConfig& cfg, const JobContext& context,
                                                   KernelEvaluationOutcome& out,
                                                   std::map<std::string, std::string>& gpu_env) {
  gpu::GpuSelectionRecord record;
  record.requested = *cfg.gpu_selection;
  std::optional<gpu::LockedGpus> locked;
  gpu::GpuInventory inventory = gpu::query_gpu_inventory();
  if (inventory.gpus.empty()) {
    record.not_applied = fmt::format(
        "no GPU found ({}); the commands ran with the devices they inherit",
        inventory.why_empty.empty() ? "the driver reports none" : inventory.why_empty);
  } else {
    bool first = true;
    auto read_inventory = [&]() -> gpu::GpuInventory {  // the list just read, then fresh ones while waiting
      if (!first) return gpu::query_gpu_inventory();
      first = false;
      return inventory;
    };
    locked.emplace(gpu::select_and_lock(*cfg.gpu_selection, read_inventory, 1, gpu::GpuLocks::default_dir(),
                                        context.cancel));
    const auto& chosen = locked->selection;
    record.chosen = chosen;
    gpu_env[chosen.env_name] = chosen.env_value;
    // NVML numbers GPUs in PCI bus order; CUDA's default is fastest first.
    if (chosen.env_name == "CUDA_VISIBLE_DEVICES") gpu_env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    for (const auto& k : cfg.kernels)
      if (k.env.contains(chosen.env_name))
        out.warnings.push_back(fmt::format("{}: env sets {}; gpu_selection's {} is used instead", k.id,
                                           chosen.env_name, chosen.env_value));
    out.gpu = detect_gpu(chosen.indices.front());
  }
  out.gpu_selection = record;
  return locked;
}

std::string config_text(const KernelEvaluationRequest& r) {
  std::string t = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", r.compare, r.sources.kernel_config,
                              r.sources.type, r.sources.compile_command, r.sources.working_dir, r.baseline,
                              r.check_performance, r.check_latency, r.overrides.rounds,
                              r.overrides.threshold, r.overrides.cupti_kind, r.overrides.latency_method);
  for (const auto& f : r.sources.files) t += "|" + fs::absolute(f).lexically_normal().string();
  for (const auto& c : r.sources.testcases) t += "|" + c;
  return t;
}

}  // namespace

KernelEvaluationOutcome evaluate_kernels(const KernelEvaluationRequest& caller_request, const JobContext& context) {
  // Once, before anything runs: every child then sees the same absolute paths.
  const KernelEvaluationRequest request = with_absolute_paths(caller_request, fs::current_path());
  RunRecorder recorder(context, request.compare ? RunKind::kCompare : RunKind::kAnalyze, {},
                       config_text(request));
  return recorder.run([&] {
    KernelEvaluationOutcome out;
    out.compare = request.compare;
    out.gpu = detect_gpu();
    KernelConfig cfg = resolve_kernel_config(request, out.gpu);
    out.warnings = cfg.warnings;
    // Held until the run returns (or crashes: the kernel drops flocks).
    std::optional<gpu::LockedGpus> locked;
    std::map<std::string, std::string> gpu_env;
    if (cfg.gpu_selection) locked = select_gpus_for_run(cfg, context, out, gpu_env);
    gpu::EnvironmentRequest env_request;
    if (!out.gpu.arch.empty()) env_request.env_passed["MAGPIE_GPU_ARCH"] = out.gpu.arch;  // set for every stage
    for (const auto& [name, value] : gpu_env) env_request.env_passed[name] = value;
    if (locked) env_request.gpu_indices = locked->selection.indices;
    out.environment = gpu::capture_environment(env_request);
    recorder.gpu(out.gpu.name);

    EvaluatorOptions opt;
    opt.performance = cfg.performance;
    opt.correctness = cfg.correctness;
    opt.latency = cfg.latency;
    if (request.check_performance) {
      out.performance_not_measured =
          why_timing_cannot_run(out.gpu, out.gpu.vendor.empty() ? gpu::query_gpu_inventory().why_empty : "",
                                cfg.kernels);
    }
    opt.check_performance = request.check_performance;
    opt.performance_unavailable = out.performance_not_measured;
    opt.python = harness_python(cfg.latency);
    opt.check_latency = request.check_latency && cfg.latency.enabled;
    opt.gpu = out.gpu;
    opt.gpu_env = gpu_env;
    opt.python_dir = default_python_dir();
    opt.cupti_lib = opt.gpu.vendor == "NVIDIA" ? default_cupti_lib() : fs::path{};
    opt.verbose = request.verbose;
    opt.cancel = context.cancel;
    if (const char* w = std::getenv("MAGPIE_HARNESS_WORKER"); w != nullptr && std::string_view(w) == "0")
      opt.harness_worker = false;
    const std::string stamp = local_timestamp();
    const std::string name = request.compare ? fmt::format("compare_{}", stamp)
                                             : fmt::format("analyze_{}_{}", cfg.kernels.front().id, stamp);
    opt.workspace = make_workspace(request.output_dir, name);
    out.workspace = opt.workspace;
    recorder.workspace(out.workspace);
    if (request.compare) opt.baseline = &cfg.kernels[request.baseline];
    if (request.verbose) {
      std::cerr << fmt::format("gpu: {} ({}); cupti: {}; python harness: {} run by {}\n",
                               opt.gpu.name.empty() ? "none" : opt.gpu.name, opt.gpu.arch,
                               opt.cupti_lib.empty() ? "none" : opt.cupti_lib.string(),
                               opt.python_dir.string(), opt.python);
    }
    if (!out.performance_not_measured.empty()) {
      // Said once, before the correctness runs, instead of once per failed round.
      const std::string note = fmt::format(
          "performance not measured: {}; checking correctness only (--no-perf skips timing on purpose)",
          out.performance_not_measured);
      if (context.face == "cli") std::cerr << "note: " << note << "\n";
      context.report(0, static_cast<double>(cfg.kernels.size() + 1), note);
    }

    // From the first build to the last timing round, so the CSV shows the whole run;
    // throttling counts only while measuring.
    std::optional<gpu::GpuMonitor> monitor;
    if (cfg.gpu_monitor.enabled)
      monitor.emplace(cfg.gpu_monitor, locked ? locked->selection.indices : std::vector<int>{},
                      out.workspace / "gpu_monitor.csv");

    Evaluator ev(opt);
    const size_t n = cfg.kernels.size();
    out.evaluations.resize(n);
    for (size_t i = 0; i < n; ++i) {
      out.evaluations[i].index = i;
      out.evaluations[i].spec = cfg.kernels[i];
    }
    ev.prestart_workers(out.evaluations);  // their imports and CUDA contexts start side by side
    for (size_t i = 0; i < n; ++i) {
      auto& e = out.evaluations[i];
      context.report(static_cast<double>(i), static_cast<double>(n + 1),
                     fmt::format("[{}] compile + correctness", e.spec.id));
      if (request.verbose) std::cerr << fmt::format("[{}] compile + correctness\n", e.spec.id);
      ev.prepare(e);
    }
    const bool timing = request.check_performance && out.performance_not_measured.empty();
    if (timing && !context.cancelled())
      context.report(static_cast<double>(n), static_cast<double>(n + 1), "performance rounds");
    // No timing (--no-perf, no GPU): no measuring window; throttling counts over the whole run.
    const bool measuring = monitor && timing;
    if (measuring) monitor->measuring_begin();
    RoundsPlan plan;
    if (request.compare) plan.baseline = request.baseline;
    plan.verdict = {cfg.performance.threshold, cfg.performance.bootstrap_resamples, cfg.performance.bootstrap_seed,
                    cfg.performance.confidence};
    double progress_now = static_cast<double>(n), progress_total = static_cast<double>(n + 1);
    out.cupti = run_performance_rounds(
        ev, out.evaluations,
        [&context, &progress_now, &progress_total, n](int round, int rounds, size_t step, size_t steps,
                                                       const std::string& id) {
          // One unit a measurement, after the correctness phase's n + 1: progress only grows (MCP),
          // and the total is what the plan holds now, so the progress line's ETA (time per
          // measurement so far x measurements left) is this phase's own.
          progress_now = static_cast<double>(n + 1 + step);
          progress_total = static_cast<double>(n + 2 + steps);
          context.report(progress_now, progress_total,
                         fmt::format("performance round {}/{}: [{}]", round + 1, rounds, id));
        },
        plan,
        [&context, &progress_now, &progress_total](const Evaluation& e, const std::optional<SpeedupEstimate>& est,
                                                    int rounds) {
          // Each candidate's verdict as soon as it is settled: an agent can act on the first one.
          std::string line =
              est ? fmt::format("verdict: [{}] {} {:.3f}x vs baseline (95% CI {:.3f}-{:.3f}) after {} round{}",
                                e.spec.id, to_string(est->verdict), est->speedup, est->ci_low, est->ci_high, rounds,
                                rounds == 1 ? "" : "s")
                  : fmt::format("verdict: [{}] none settled after {} round{} (see the table)", e.spec.id, rounds,
                                rounds == 1 ? "" : "s");
          // On a terminal, over the live progress line (cleared first; the ticker redraws it below).
          if (context.face == "cli") std::cerr << (::isatty(STDERR_FILENO) ? "\r\033[K" : "") << line << "\n";
          progress_now = std::nextafter(progress_now, progress_now + 1);
          context.report(progress_now, progress_total, line);
        });
    ev.release_workers();  // their GPU memory, before the ncu pass and the next run
    if (monitor) {
      if (measuring) monitor->measuring_end();
      out.gpu_monitor = monitor->finish();
      for (const auto& w : gpu::throttle_warnings(out.gpu_monitor->throttle))
        out.warnings.push_back("gpu_monitor: " + w);
    }
    for (auto& e : out.evaluations) ev.finish(e);
    out.cancelled = context.cancelled();

    out.all_correct = true;
    for (const auto& e : out.evaluations) out.all_correct = out.all_correct && e.correct();
    out.timestamp = iso_timestamp();
    out.verdict_settings = {cfg.performance.threshold, cfg.performance.bootstrap_resamples,
                            cfg.performance.bootstrap_seed, cfg.performance.confidence};
    if (request.compare) {
      out.ranking = rank_evaluations(out.evaluations, request.baseline, out.verdict_settings);
      out.regression = request.fail_on_regression && out.ranking->any_regression;
      out.report_path = out.workspace / "compare_report.json";
    } else {
      out.report_path = out.workspace / "analyze_report.json";
    }
    write_file_atomic(out.report_path, report_json(out).dump(2));
    out.run_id = recorder.id();

    for (const auto& e : out.evaluations) {
      if (!e.measured() || e.samples_ns().empty()) continue;
      // The report's median (core/verdict), so the store and the report agree on an even count.
      recorder.metric(e.spec.id + ".median_ns", stats::median_of(e.samples_ns()));
    }
    recorder.metric("all_correct", out.all_correct ? 1 : 0);
    if (out.cancelled) {
      recorder.cancel();
    } else if (!out.all_correct) {
      recorder.fail("an implementation is not correct");
    } else if (out.regression) {
      recorder.fail("a candidate is SLOWER than the baseline (fail_on_regression)");
    } else if (!out.performance_not_measured.empty()) {
      // Correct is not a measured run: the store must not call it succeeded.
      recorder.fail("performance not measured: " + out.performance_not_measured);
    }
    return out;
  });
}

nlohmann::json report_json(const KernelEvaluationOutcome& o) {
  const ReportEnvironment env{o.environment, o.gpu, o.gpu_selection, o.gpu_monitor};
  nlohmann::json j = o.compare && o.ranking
                         ? compare_report(o.evaluations, *o.ranking, o.verdict_settings, o.cupti, o.timestamp, &env)
                         : analyze_report(o.evaluations, o.timestamp, &env);
  if (!o.warnings.empty()) j["warnings"] = o.warnings;
  // Ours: performance was asked for but could not be measured, and why.
  if (!o.performance_not_measured.empty()) j["performance_not_measured"] = o.performance_not_measured;
  return j;
}

namespace {

// The console's lines for gpu_selection and gpu_monitor.
std::string gpu_run_text(const KernelEvaluationOutcome& o) {
  std::string text;
  if (o.gpu_selection) {
    const auto& r = *o.gpu_selection;
    if (!r.chosen) {
      text += "note: gpu_selection: not applied: " + r.not_applied + "\n";
    } else {
      std::vector<std::string> gpus;
      for (size_t i = 0; i < r.chosen->indices.size(); ++i)
        gpus.push_back(fmt::format("GPU {} ({}{})", r.chosen->indices[i], r.chosen->names[i],
                                   r.chosen->uuids[i].empty() ? "" : ", " + r.chosen->uuids[i]));
      text += fmt::format("GPU: {} via {}={} ({})\n", fmt::join(gpus, ", "), r.chosen->env_name,
                          r.chosen->env_value, r.chosen->reason);
    }
  }
  if (o.gpu_monitor) {
    const auto& m = *o.gpu_monitor;
    if (!m.available) {
      text += "note: gpu_monitor: unavailable: " + m.reason + "\n";
    } else {
      text += fmt::format("gpu_monitor: {} samples every {:g} s in {}\n", m.samples, m.interval_s,
                          m.csv_path.string());
      for (const auto& g : m.gpus) {
        auto range = [&](const char* field, const char* unit) -> std::string {
          auto it = g.fields.find(field);
          if (it == g.fields.end()) return fmt::format("{} n/a", field);
          return fmt::format("{} {:.0f}/{:.0f}/{:.0f}{}", field, it->second.min, it->second.mean, it->second.max,
                             unit);
        };
        text += fmt::format("  GPU {} (min/mean/max): {}, {}, {}, {}\n", g.index, range("sm_clock_mhz", " MHz"),
                            range("power_w", " W"), range("utilization_pct", "%"), range("temperature_c", " C"));
      }
      if (!m.throttle.reasons_reported)
        text += "note: gpu_monitor: the driver reports no clocks event reasons; throttling was not checked\n";
      // Throttling is in o.warnings: the CLI prints them on stderr, MCP returns them.
    }
  }
  return text;
}

}  // namespace

std::string console_text(const KernelEvaluationOutcome& o) {
  std::string text = markdown_table(o.evaluations, o.ranking ? &*o.ranking : nullptr);
  if (o.ranking) text += "\n" + o.ranking->summary + "\n";
  if (!o.cupti.kind.empty()) text += "note: " + describe(o.cupti) + "\n";
  for (const auto& e : o.evaluations) {
    // A build's notes (the architecture it targeted) when it ran; "no build step" is no news.
    if (!e.compiling.commands.empty())
      for (const auto& n : e.compiling.notes) text += fmt::format("note: {}: {}\n", e.spec.id, n);
    for (const auto& n : e.correctness.notes) text += fmt::format("note: {}: {}\n", e.spec.id, n);
  }
  text += gpu_run_text(o);
  if (!o.performance_not_measured.empty())
    text += fmt::format("note: performance not measured: {}; correctness only (exit {})\n", o.performance_not_measured,
                        kExitPerformanceNotMeasured);
  if (o.cancelled) text += "note: cancelled; the report holds what was measured before\n";
  text += "Workspace: " + o.workspace.string() + "\n";
  return text;
}

std::string error_text(const KernelEvaluationOutcome& o) {
  std::string text;
  // One cause per implementation, from the stage that failed, with its fix and
  // where the whole story is; the commands and log tails are in the report.
  for (const auto& e : o.evaluations) {
    std::string stage;
    const StageResult* st = e.deciding_stage(&stage);
    if (st == nullptr || st->state != StageState::kFailed) continue;  // "not measured" is said once, in the notes
    std::string cause = st->cause;
    if (cause.empty() && !st->errors.empty()) cause = st->errors.front().substr(0, st->errors.front().find('\n'));
    text += fmt::format("{}: {} FAILED: {}\n", e.spec.id, stage, cause);
    if (!st->fix.empty()) text += "  fix: " + st->fix + "\n";
    if (stage == "performance") {
      text += fmt::format("  logs: {}\n", (e.dir / "performance_r*.log").string());
    } else if (!st->log.empty()) {
      text += "  log: " + st->log.string() + "\n";
    }
  }
  if (o.regression) text += "error: a candidate is SLOWER than the baseline (--fail-on-regression)\n";
  return text;
}

}  // namespace magpie::jobs
