#include "jobs/serve_jobs.hpp"

#include "core/error.hpp"
#include "jobs/run_recorder.hpp"
#include "serve/benchmark_report.hpp"
#include "serve/benchmark_runner.hpp"

namespace magpie::jobs {

namespace {

// The figures a later `results diff` or a listing wants at a glance.
void record_metrics(const nlohmann::json& report, RunRecorder& recorder) {
  if (const auto t = report.find("throughput"); t != report.end() && t->is_object()) {
    for (const char* key : {"request_throughput", "output_throughput", "total_token_throughput",
                            "completed_requests", "duration_seconds"}) {
      if (t->contains(key) && (*t)[key].is_number()) recorder.metric(key, (*t)[key].get<double>());
    }
  }
  if (const auto l = report.find("latency"); l != report.end() && l->is_object()) {
    for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
      if (!l->contains(metric) || !(*l)[metric].is_object()) continue;
      for (const char* stat : {"mean_ms", "median_ms", "p99_ms"}) {
        const auto& m = (*l)[metric];
        if (m.contains(stat) && m[stat].is_number())
          recorder.metric(std::string(metric) + "." + stat, m[stat].get<double>());
      }
    }
  }
}

}  // namespace

ServingBenchmarkOutcome run_serving_benchmark(const serve::BenchmarkConfig& config,
                                              const JobContext& context) {
  RunRecorder recorder(context, RunKind::kBenchmark, {},
                       config.framework + "|" + config.model + "|" + config.run_mode);
  return recorder.run([&] {
    try {
      serve::validate(config);
    } catch (const Error& e) {
      // Magpie exits 1 when neither a YAML nor framework and model are given.
      throw Error(ErrorKind::kRejected, e.message(), e.file(), e.byte_offset(), e.hint());
    }
    serve::RunContext run;
    run.progress = context.console;
    run.verbose = context.verbose;
    run.stop = context.cancel;
    if (context.progress) {
      run.on_progress = [&context](double done, std::optional<double> total, const std::string& message) {
        context.report(done, total, message);
      };
    }
    run.on_workspace = [&recorder](const std::filesystem::path& ws) { recorder.workspace(ws); };
    serve::BenchmarkOutcome result = serve::run_benchmark(config, run);
    ServingBenchmarkOutcome out;
    out.success = result.success;
    out.cancelled = context.cancelled();
    out.workspace = result.workspace;
    out.report = std::move(result.report);
    recorder.workspace(out.workspace);
    record_metrics(out.report, recorder);
    out.run_id = recorder.id();
    if (out.cancelled) {
      recorder.cancel();
    } else if (!out.success) {
      std::string why = "the benchmark did not succeed";
      if (const auto e = out.report.find("errors"); e != out.report.end() && e->is_array() && !e->empty() &&
                                                    e->front().is_string())
        why = e->front().get<std::string>();
      recorder.fail(why);
    }
    return out;
  });
}

std::string console_text(const ServingBenchmarkOutcome& outcome) {
  return serve::summary_text(outcome.report);
}

}  // namespace magpie::jobs
