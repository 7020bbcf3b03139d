#pragma once
// The environment block of a serving report: Magpie's build, the model and
// its revision, the image and its digest (docker mode), the variables the
// engine was given and the GPUs it used. Built from what the run recorded in
// the report, so a run that failed early still says what it knows.
#include "gpu/environment.hpp"
#include "serve/benchmark_report.hpp"

namespace magpie::serve {

// Pure: what to record, from the report so far.
gpu::EnvironmentRequest environment_request(const BenchmarkReport& report);

// Reads the driver and the host (gpu::capture_environment) for that request,
// with a note when the GPUs listed are not the server's (endpoint mode).
gpu::EnvironmentSnapshot capture_benchmark_environment(const BenchmarkReport& report);

}  // namespace magpie::serve
