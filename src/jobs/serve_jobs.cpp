#include "jobs/serve_jobs.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "jobs/run_recorder.hpp"
#include "serve/benchmark_report_writer.hpp"
#include "serve/benchmark_runner.hpp"

namespace magpie::jobs {

std::map<std::string, double> headline_metrics(const serve::BenchmarkReport& report) {
  std::map<std::string, double> out;
  if (!report.cases.empty()) {
    // The report's top-level figures are the first case's.
    const auto& m = report.cases.front().metrics;
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
