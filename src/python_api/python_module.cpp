// Magpie._magpie: the Python face over src/jobs, as thin as the CLI and the MCP
// tools. Each call fills a job's typed request, runs the job on a worker
// thread with the GIL released, and turns its typed result into tables
// (python_tables.hpp) and JSON text; Magpie/api.py wraps them for users.
#include <Python.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "analysis/step_annotation.hpp"
#include "core/error.hpp"
#include "jobs/trace_jobs.hpp"
#include "python_tables.hpp"

namespace nb = nanobind;

namespace magpie::python_api {

namespace {

// Runs `job(context)` on a worker thread while this thread, GIL released,
// waits for it and checks for Ctrl-C every 100 ms: a KeyboardInterrupt sets
// the context's cancel flag (jobs that honour it stop early; trace jobs do not
// yet) and is raised once the job has returned. Errors cross as they were.
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
  m.def("tracelens", &tracelens, nb::arg("trace"), nb::arg("mode"), nb::arg("stages"), nb::arg("output_dir"),
        nb::arg("threads"), nb::arg("record"), nb::arg("progress") = nb::none());
}
