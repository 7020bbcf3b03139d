#include "jobs/serve_jobs.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "jobs/run_recorder.hpp"
#include "serve/benchmark_report_writer.hpp"
#include "serve/benchmark_runner.hpp"

namespace magpie::jobs {

std::map<std::string, double> headline_metrics(const serve::BenchmarkReport& report) {
  std::map<std::string, double> out;
  if (const serve::CaseReport* head = serve::headline_case(report)) {
    // The report's top-level figures: the first case's, or a search's knee's.
    const auto& m = head->metrics;
    out["request_throughput"] = m.request_throughput;
    out["output_throughput"] = m.output_throughput;
    out["total_token_throughput"] = m.total_token_throughput;
    out["completed_requests"] = static_cast<double>(m.completed);
    out["failed_requests"] = static_cast<double>(m.failed);
    out["duration_seconds"] = m.duration_s;
    for (auto [name, stats] :
         {std::pair{"ttft", &m.ttft}, {"tpot", &m.tpot}, {"itl", &m.itl}, {"e2el", &m.e2el}}) {
      const std::string prefix(name);
      out[prefix + ".mean_ms"] = stats->mean_ms;
      out[prefix + ".median_ms"] = stats->median_ms;
      auto p99 = stats->percentiles_ms.find(99.0);
      out[prefix + ".p99_ms"] = p99 == stats->percentiles_ms.end() ? 0.0 : p99->second;
    }
  }
  out["execution_time_s"] = report.execution_time_s;
  return out;
}

namespace {

// The load a benchmark applies, for its series key: each case's label and prompt count,
// the dataset when not random, the precision when given.
std::string series_workload(const serve::BenchmarkConfig& config) {
  std::string out;
  for (const auto& c : config.cases())
    out += fmt::format("{}{}_N{}", out.empty() ? "" : ",", c.label(), c.num_prompts);
  if (config.client.dataset != "random") out += " " + config.client.dataset;
  if (config.precision_given) out += " " + config.precision;
  return out;
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
      run.on_progress = [&context](double done, std::optional<double> total,
                                   const std::string& message) {
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
    if (out.report.gpu_selection) {
      // The GPUs the engine was given, as the store's gpu column: "NVIDIA H200 (GPU 2,3)".
      const auto& sel = *out.report.gpu_selection;
      recorder.gpu(
          fmt::format("{} (GPU {})", sel.names.empty() ? "" : sel.names.front(), sel.env_value));
    }
    for (const auto& [name, value] : headline_metrics(out.report)) recorder.metric(name, value);
    // What the run's series key reads (store/series.hpp): runs with the same engine, model,
    // image and workload are points of one series.
    recorder.metadata("engine", config.framework);
    recorder.metadata("model", !config.model.empty() || !out.report.server
                                   ? config.model
                                   : out.report.server->served_model);
    if (out.report.server) {
      recorder.metadata("model_revision", out.report.server->model_revision);
      recorder.metadata("image", out.report.server->image);
    }
    recorder.metadata("workload", series_workload(config));
    out.run_id = recorder.id();
    if (out.cancelled) {
      recorder.cancel();
    } else if (!out.success) {
      recorder.fail(out.report.errors.empty() ? "the benchmark did not succeed (status " +
                                                    serve::to_string(out.report.status) + ")"
                                              : out.report.errors.front());
    }
    return out;
  });
}

std::string console_text(const ServingBenchmarkOutcome& outcome) {
  return serve::summary_text(outcome.report);
}

}  // namespace magpie::jobs
