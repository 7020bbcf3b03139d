#include "serve/benchmark_environment.hpp"

namespace magpie::serve {

gpu::EnvironmentRequest environment_request(const BenchmarkReport& report) {
  gpu::EnvironmentRequest request;
  request.model = report.model;
  if (report.server) {
    const auto& s = *report.server;
    // The engine's own variables: recorded as set, over the inherited ones.
    request.env_passed = s.env;
    request.model_revision = s.model_revision;
    request.image = s.image;
    request.image_digest = s.image_digest;
    if (report.model.empty()) request.model = s.served_model;
  }
  if (report.gpu_selection) request.gpu_indices = report.gpu_selection->indices;
  return request;
}

gpu::EnvironmentSnapshot capture_benchmark_environment(const BenchmarkReport& report) {
  auto snapshot = gpu::capture_environment(environment_request(report));
  if (report.server && report.server->mode == "endpoint")
    snapshot.notes.push_back(
        "endpoint mode: the server was not launched by magpie; the GPUs and variables listed are "
        "this host's, not necessarily the server's");
  if (report.server && report.server->mode == "docker" && report.server->image_digest.empty())
    snapshot.notes.push_back("image_digest: not read from docker for this run");
  return snapshot;
}

}  // namespace magpie::serve
