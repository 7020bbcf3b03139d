#pragma once
// What the rules look at, read once from the three kinds of input
// (readers.hpp) so the rules never touch JSON or CSV.
#include <optional>
#include <string>
#include <vector>

namespace magpie::advice {

// One piece of work placed on the roofline: a kernel (analyze) or an op row
// (TraceLens). Absent figures stay nullopt.
struct RooflineObservation {
  std::string subject;
  double time_share = 1;                       // of the measured time (analyze: the whole run)
  std::optional<double> arithmetic_intensity;  // FLOP/byte
  std::optional<double> achieved_tbps, peak_tbps;
  std::optional<double> achieved_tflops, peak_tflops;
  std::string compute_spec;           // "matrix_bf16", ... (TraceLens)
  std::string bound;                  // "memory" | "compute" | "" = decide from the ridge
  std::optional<double> pct_of_roof;  // achieved / roof on the bound side, %
};

// Launches and their lengths. `rows` are (launches, mean µs) pairs: one per
// kernel name or op row, or one for the whole measured call.
struct LaunchObservation {
  std::string subject;
  std::vector<std::pair<double, double>> rows;
  double graph_share = 0;   // of launches replayed from CUDA/HIP graphs (no host launch cost)
  double min_launches = 1;  // fewer launches than this: no rule (one call is not a stream)
};

struct TimelineObservation {
  std::string subject;  // "rank 0", "decode_only"
  double span_us = 0, busy_us = 0, idle_us = 0, computation_us = 0, exposed_communication_us = 0;
};

struct CorrectnessObservation {
  std::string compiling_state, correctness_state;
  std::vector<std::string> errors;
};

// A hot kernel of a gap report, for category-specific hints.
struct HotKernel {
  std::string name, category;
  double pct_total = 0;
  double calls = 0, avg_us = 0;
};

}  // namespace magpie::advice
