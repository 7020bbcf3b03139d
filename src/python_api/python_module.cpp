// Magpie._magpie: the Python face over src/jobs, as thin as the CLI and the MCP
// tools. Each call fills a job's typed request, runs the job on a worker
// thread with the GIL released, and turns its typed result into tables
// (python_tables.hpp) and JSON text; Magpie/api.py wraps them for users.
#include <Python.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "analysis/step_annotation.hpp"
#include "core/config_keys.hpp"
#include "core/error.hpp"
#include "jobs/kernel_jobs.hpp"
#include "jobs/results_jobs.hpp"
#include "jobs/serve_jobs.hpp"
#include "jobs/trace_jobs.hpp"
#include "store/report_diff_writers.hpp"
#include "store/run_record_json.hpp"
#include "python_benchmark.hpp"
#include "python_tables.hpp"
#include "serve/benchmark_report_writer.hpp"

namespace nb = nanobind;

namespace magpie::python_api {

namespace {

// Runs `job(context)` on a worker thread while this thread, GIL released,
// waits for it and checks for Ctrl-C every 100 ms: a KeyboardInterrupt sets
// the context's cancel flag (the job stops at its next check: a chunk of text,
// a file, a phase) and is raised once the job has returned. Errors cross as
// they were.
template <class Job>
auto run_job(nb::object progress, Job&& job) {
  using Result = decltype(job(std::declval<const jobs::JobContext&>()));
  std::atomic<bool> cancel{false};
  jobs::JobContext context;
  context.face = "python";
  context.command_line = "python";
  context.cancel = &cancel;
  if (!progress.is_none()) {
    context.progress = [progress](const jobs::Progress& p) {
      nb::gil_scoped_acquire gil;
      try {
        progress(p.done, p.total ? nb::cast(*p.total) : nb::none(), p.message);
      } catch (nb::python_error& e) {
        e.discard_as_unraisable("Magpie progress callback");  // never stops the job
      }
    };
  }
  std::optional<Result> result;
  std::exception_ptr error;
  bool interrupted = false;
  {
    nb::gil_scoped_release nogil;
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread worker([&] {
      try {
        result.emplace(job(context));
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(m);
      done = true;
      cv.notify_all();
    });
    std::unique_lock lock(m);
    while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) {
      lock.unlock();
      {
        nb::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {  // a handler raised (KeyboardInterrupt)
          PyErr_Clear();
          interrupted = true;
          cancel = true;
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (interrupted) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw nb::python_error();
  }
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

// Bytes parsed while a trace is read become progress steps too, as the CLI's
// progress line shows them (attach_ingest_progress).
void report_ingest(trace::IngestOptions& ingest, const jobs::JobContext& context) {
  if (!context.progress) return;
  ingest.on_bytes = [&context](const std::string& origin, size_t done, size_t total) {
    context.report(static_cast<double>(done), static_cast<double>(total), "reading " + origin);
  };
}

nb::list string_list(const std::vector<std::string>& items) {
  nb::list out;
  for (const auto& s : items) out.append(nb::str(s.data(), s.size()));
  return out;
}

nb::dict load_trace(const std::string& path, unsigned threads, bool include_python_functions,
                    nb::object progress) {
  trace::IngestOptions ingest;
  ingest.threads = threads;
  ingest.include_python_functions = include_python_functions;
  struct Built {
    jobs::LoadedTrace loaded;
    Table kernels, ops, timeline;
  };
  Built b = run_job(progress, [&](const jobs::JobContext& context) {
    trace::IngestOptions with_progress = ingest;
    report_ingest(with_progress, context);
    Built out{jobs::load_trace(path, with_progress, context), {}, {}, {}};
    out.kernels = kernel_table(out.loaded.trace);
    out.ops = op_table(out.loaded.trace);
    out.timeline = timeline_table(out.loaded.timeline);
    return out;
  });
  const auto& t = b.loaded.trace;
  nb::dict out;
  out["path"] = t.path;
  out["format"] = trace::to_string(t.format);
  out["rank"] = t.rank;
  out["kernels"] = to_python(std::move(b.kernels));
  out["ops"] = to_python(std::move(b.ops));
  out["timeline"] = to_python(std::move(b.timeline));
  out["warnings"] = string_list(t.warnings);
  return out;
}

nb::dict gap_analysis(const std::string& trace_dir, size_t top_k, double start_pct, double end_pct,
                      double min_duration_us, const std::string& output_dir, unsigned threads,
                      bool record, nb::object progress) {
  jobs::GapAnalysisRequest request;
  request.trace_dir = trace_dir;
  request.config.top_k = top_k;
  request.config.start_pct = start_pct;
  request.config.end_pct = end_pct;
  request.config.min_duration_us = min_duration_us;
  request.ingest.threads = threads;
  request.output_dir = output_dir;
  struct Built {
    jobs::GapAnalysisOutcome outcome;
    Table kernels, ranks;
    std::string report, console;
    std::vector<std::string> warnings;
  };
  Built b = run_job(progress, [&](const jobs::JobContext& context) {
    jobs::JobContext c = context;
    c.record = record;
    jobs::GapAnalysisRequest r = request;
    report_ingest(r.ingest, c);
    Built out{jobs::run_gap_analysis(r, c), {}, {}, {}, {}, {}};
    out.kernels = gap_kernel_table(out.outcome.result);
    out.ranks = gap_rank_table(out.outcome.result);
    out.report = jobs::report_json(out.outcome).dump();
    out.console = jobs::console_text(out.outcome);
    out.warnings = jobs::warnings(out.outcome);
    return out;
  });
  nb::dict out;
  out["kernels"] = to_python(std::move(b.kernels));
  out["ranks"] = to_python(std::move(b.ranks));
  out["report_json"] = b.report;
  out["console"] = b.console;
  out["warnings"] = string_list(b.warnings);
  out["output_dir"] = b.outcome.files.output_dir.string();
  out["csv"] = b.outcome.files.csv.string();
  out["json"] = b.outcome.files.json.string();
  out["seconds"] = b.outcome.seconds;
  out["run_id"] = b.outcome.run_id;
  return out;
}

nb::dict tracelens(const std::string& trace, const std::string& mode, const std::vector<std::string>& stages,
                   const std::string& output_dir, unsigned threads, bool record, nb::object progress) {
  analysis::TraceLensOptions o;
  o.trace = trace;
  o.mode = mode == "classic" ? "pytorch" : mode;  // as `magpie tracelens --mode`
  if (o.mode != "inference" && o.mode != "pytorch") {
    throw Error(ErrorKind::kUsage, "unknown tracelens mode '" + mode + "'", "", std::nullopt,
                "use mode='inference' or mode='pytorch'");
  }
  for (const auto& name : stages) {
    auto s = analysis::parse_stage(name);
    if (!s) {
      throw Error(ErrorKind::kUsage, "unknown stage '" + name + "'", "", std::nullopt,
                  "use prefilldecode, decode or prefill");
    }
    o.stages.push_back(*s);
  }
  o.output_dir = output_dir;
  o.ingest.threads = threads;
  struct Built {
    jobs::TraceLensOutcome outcome;
    std::string report, console;
  };
  Built b = run_job(progress, [&](const jobs::JobContext& context) {
    jobs::JobContext c = context;
    c.record = record;
    analysis::TraceLensOptions with_progress = o;
    report_ingest(with_progress.ingest, c);
    Built out{jobs::run_tracelens(with_progress, c), {}, {}};
    out.report = jobs::report_json(out.outcome).dump();
    out.console = jobs::console_text(out.outcome);
    return out;
  });
  const auto& r = b.outcome.result;
  nb::dict out;
  out["report_json"] = b.report;
  out["console"] = b.console;
  out["output_files"] = string_list(r.output_files);
  out["errors"] = string_list(r.errors);
  out["warnings"] = string_list(r.warnings);
  out["manifest"] = r.manifest.string();
  out["run_id"] = b.outcome.run_id;
  return out;
}

// `magpie compare -k CONFIG`: the same job, its report, and the exit status
// the CLI returns for it (1 not all correct or a regression under
// fail_on_regression, 8 timing could not run).
nb::dict compare(const std::string& config, bool no_perf, bool no_latency, size_t baseline, int rounds,
                 double threshold, bool fail_on_regression, bool strict, const std::string& output_dir,
                 bool record, nb::object progress) {
  jobs::KernelEvaluationRequest request;
  request.compare = true;
  request.sources.kernel_config = config;
  request.overrides.rounds = rounds;
  request.overrides.threshold = threshold;
  request.baseline = baseline;
  request.check_performance = !no_perf;
  request.check_latency = !no_latency;
  request.fail_on_regression = fail_on_regression;
  request.strict = strict;
  request.output_dir = output_dir;
  struct Built {
    jobs::KernelEvaluationOutcome outcome;
    std::string report, console, errors;
  };
  Built b = run_job(progress, [&](const jobs::JobContext& context) {
    jobs::JobContext c = context;
    c.record = record;
    Built out{jobs::evaluate_kernels(request, c), {}, {}, {}};
    if (!out.outcome.report_path.empty()) out.report = jobs::report_json(out.outcome).dump();
    out.console = jobs::console_text(out.outcome);
    out.errors = jobs::error_text(out.outcome);
    return out;
  });
  const auto& o = b.outcome;
  nb::dict out;
  out["report_json"] = b.report;
  out["console"] = b.console;
  out["errors"] = b.errors;
  out["warnings"] = string_list(o.warnings);
  out["exit_code"] = o.exit_code();
  out["all_correct"] = o.all_correct;
  out["regression"] = o.regression;
  out["performance_not_measured"] = o.performance_not_measured;
  out["workspace"] = o.workspace.string();
  out["report_path"] = o.report_path.string();
  out["run_id"] = o.run_id;
  return out;
}

// `magpie benchmark [FRAMEWORK] [-b CONFIG] --flag ...`: the same
// config resolution (the YAML, then the flags as the CLI applies them), the
// same job, its report and the CLI's exit status (1 when it did not succeed).
nb::dict benchmark(const std::string& config_path, const std::map<std::string, std::string>& settings,
                   const std::vector<std::string>& engine_args, const std::vector<std::string>& envs,
                   bool strict, bool record, nb::object progress) {
  serve::BenchmarkFlags flags = benchmark_flags(settings);
  flags.extra_engine_args = engine_args;
  flags.envs = envs;
  const bool from_yaml = !config_path.empty();
  serve::BenchmarkConfig config = from_yaml ? serve::load_benchmark_yaml(config_path) : serve::BenchmarkConfig{};
  serve::apply_flags(config, flags, from_yaml);
  reject_unknown_keys(config.unknown_keys, strict, config_path);
  struct Built {
    jobs::ServingBenchmarkOutcome outcome;
    Table cases, requests, itls;
    std::string report, console;
  };
  Built b = run_job(progress, [&](const jobs::JobContext& context) {
    jobs::JobContext c = context;
    c.record = record;
    Built out{jobs::run_serving_benchmark(config, c), {}, {}, {}, {}, {}};
    out.cases = case_table(out.outcome.report);
    out.requests = request_table(out.outcome.report);
    out.itls = itl_table(out.outcome.report);
    out.report = serve::report_json(out.outcome.report).dump();
    out.console = jobs::console_text(out.outcome);
    return out;
  });
  const auto& o = b.outcome;
  std::vector<std::string> warnings = config.warnings;  // the config's, then the run's own
  for (const auto& w : o.report.warnings)
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  nb::dict out;
  out["report_json"] = b.report;
  out["console"] = b.console;
  out["cases"] = to_python(std::move(b.cases));
  out["requests"] = to_python(std::move(b.requests));
  out["itls"] = to_python(std::move(b.itls));
  out["success"] = o.success;
  out["status"] = serve::to_string(o.report.status);
  out["exit_code"] = o.success ? 0 : 1;
  out["errors"] = string_list(o.report.errors);
  out["warnings"] = string_list(warnings);
  out["workspace"] = o.workspace.string();
  out["run_id"] = o.run_id;
  return out;
}

// `magpie results list --json`'s text: the records as the CLI writes them.
std::string results_list(const std::string& store, const std::string& kind, const std::string& status,
                         size_t limit) {
  jobs::ResultsListRequest request;
  request.store = store;
  request.kind = kind;
  request.status = status;
  request.limit = limit;
  std::vector<store::RunRecord> runs;
  {
    nb::gil_scoped_release nogil;
    runs = jobs::list_runs(request);
  }
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : runs) arr.push_back(store::to_json(r));
  return arr.dump();
}

// `magpie results diff`: the report diff as `--format json` writes it, or (op
// tables) their columns; the notes the CLI prints on stderr; any SLOWER.
nb::dict results_diff(const std::string& store, const std::vector<std::string>& targets,
                      const std::vector<std::string>& labels, bool ops, bool no_repeats, bool aa,
                      std::optional<double> threshold, std::optional<int> resamples,
                      std::optional<double> run_noise) {
  jobs::ResultsDiffRequest request;
  request.store = store;
  request.targets = targets;
  request.labels = labels;
  request.ops = ops;
  request.no_repeats = no_repeats;
  request.aa = aa;
  request.threshold = threshold;
  request.resamples = resamples;
  request.run_noise = run_noise;
  std::optional<jobs::ResultsDiffOutcome> outcome;
  std::string report;
  Table table;
  {
    nb::gil_scoped_release nogil;
    outcome = jobs::diff_runs(request);
    if (outcome->diff) report = store::diff_json(*outcome->diff).dump();
    if (outcome->ops) table = op_comparison_table(*outcome->ops);
  }
  nb::dict out;
  out["kind"] = outcome->ops ? "ops" : "reports";
  out["report_json"] = report;
  out["ops"] = to_python(std::move(table));
  out["warnings"] = string_list(outcome->ops ? outcome->ops->warnings : outcome->diff->warnings);
  out["notes"] = string_list(outcome->notes);
  out["regression"] = outcome->regression;
  return out;
}

// magpie::Error → Magpie.MagpieError(message, exit_code, kind): the exit code
// the CLI returns for the same error (README "Exit codes").
void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    nb::object cls = nb::module_::import_("Magpie._errors").attr("MagpieError");
    nb::object exc = cls(e.what(), exit_code_for(e.kind()), to_string(e.kind()));
    PyErr_SetObject(cls.ptr(), exc.ptr());
  }
}

}  // namespace

}  // namespace magpie::python_api

NB_MODULE(_magpie, m) {
  using namespace magpie::python_api;
  m.doc() = "Magpie's jobs, called in-process (use the Magpie package, not this module).";
  nb::register_exception_translator(translate_error);
  m.def("load_trace", &load_trace, nb::arg("path"), nb::arg("threads") = 0,
        nb::arg("include_python_functions") = false, nb::arg("progress") = nb::none());
  m.def("gap_analysis", &gap_analysis, nb::arg("trace_dir"), nb::arg("top_k"), nb::arg("start_pct"),
        nb::arg("end_pct"), nb::arg("min_duration_us"), nb::arg("output_dir"), nb::arg("threads"),
        nb::arg("record"), nb::arg("progress") = nb::none());
  m.def("compare", &compare, nb::arg("config"), nb::arg("no_perf"), nb::arg("no_latency"), nb::arg("baseline"),
        nb::arg("rounds"), nb::arg("threshold"), nb::arg("fail_on_regression"), nb::arg("strict"),
        nb::arg("output_dir"), nb::arg("record"), nb::arg("progress") = nb::none());
  m.def("benchmark", &benchmark, nb::arg("config"), nb::arg("settings"), nb::arg("engine_args"), nb::arg("envs"),
        nb::arg("strict"), nb::arg("record"), nb::arg("progress") = nb::none());
  m.def("results_list", &results_list, nb::arg("store"), nb::arg("kind"), nb::arg("status"), nb::arg("limit"));
  m.def("results_diff", &results_diff, nb::arg("store"), nb::arg("targets"), nb::arg("labels"), nb::arg("ops"),
        nb::arg("no_repeats"), nb::arg("aa"), nb::arg("threshold").none(), nb::arg("resamples").none(),
        nb::arg("run_noise").none());
  m.def("tracelens", &tracelens, nb::arg("trace"), nb::arg("mode"), nb::arg("stages"), nb::arg("output_dir"),
        nb::arg("threads"), nb::arg("record"), nb::arg("progress") = nb::none());
}
