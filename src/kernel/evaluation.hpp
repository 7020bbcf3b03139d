#pragma once
// The state of one implementation as it moves through the pipeline:
// compile → correctness → performance (and the latency contract), each stage
// SUCCESS / FAILED / SKIPPED with its errors, commands and log.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernel/cupti_choice.hpp"
#include "kernel/kernel_config.hpp"
#include "kernel/latency_contract.hpp"
#include "profiler/kernel_record.hpp"

namespace magpie::kernel {

enum class StageState { kSuccess, kFailed, kSkipped };
const char* to_string(StageState s);

struct StageResult {
  StageState state = StageState::kSkipped;
  std::vector<std::string> errors;
  std::vector<std::string> notes;     // e.g. "only finiteness was checked"
  std::vector<std::string> commands;  // as run, shell-quoted
  std::filesystem::path log;
  double wall_seconds = 0;
  // A failed stage's reason in one line (kernel/failure_cause.hpp), and its fix
  // when one is known; the full errors above keep the command and the log tail.
  std::string cause;
  std::string fix;
};

// One performance run of one implementation.
// A timing-integrity rule the harness saw broken (python/magpie_bench/integrity.py).
struct IntegrityViolation {
  std::string rule;
  std::string detail;
};

struct RoundMeasurement {
  int round = 0;                        // -1 for the probe
  bool probe = false;                   // cupti_kind auto's probe: kept out of samples and the kernel table
  std::string source;                   // latency_json | cupti_busy_union | process_wall
  std::vector<double> samples_ns;
  int64_t cupti_busy_ns = 0;
  size_t cupti_kernels = 0;
  std::string cupti_kind;               // MAGPIE_CUPTI_KIND of this run; "" = no CUPTI library
  int64_t cross_stream_overlap_ns = 0;  // over all kernels in the trace, kernel_filter or not
  size_t timed_kernels = 0;             // kernels the harness timed (not its flush/spin kernels)
  double timed_blocks = 0;              // their thread blocks, summed
  double wall_seconds = 0;
  std::filesystem::path cupti_jsonl;
  std::vector<IntegrityViolation> integrity_violations;  // from the payload's integrity block
};

struct Evaluation {
  size_t index = 0;
  KernelSpec spec;
  std::filesystem::path dir;  // <workspace>/<id>
  StageResult compiling, correctness, performance, latency;
  std::string correctness_scope;      // what the gate actually checked
  nlohmann::json correctness_detail;  // the Python harness's report, if any
  std::vector<RoundMeasurement> rounds;
  std::vector<profiler::KernelRecord> kernels;  // all measured rounds (not the probe), as CUPTI saw them
  std::optional<LatencyReport> latency_report;  // the last round's
  nlohmann::json ncu_summary;                   // metric → {value, unit, peak?, pct_of_peak?}
  double floor_ns = 0;                          // roofline floor per sample, 0 = unknown
  std::vector<std::string> errors;              // all stages' errors, in order
  CuptiChoice cupti;                            // how CUPTI timed the rounds, and why

  std::vector<double> samples_ns() const;                     // measured rounds pooled (no probe)
  std::vector<std::vector<double>> samples_by_round() const;  // one entry per measured round, in order
  std::string timing_source() const;                          // the first measured round's source
  bool correct() const { return correctness.state == StageState::kSuccess; }
  bool measured() const { return performance.state == StageState::kSuccess; }
  // Magpie's score: 0.5 correctness + 0.5 performance; 1.0 when correct and performance skipped.
  double score() const;
  // The stage whose cause explains this implementation's outcome: the first
  // FAILED one, else performance not measured for a reason (no GPU); its name
  // ("compile", "correctness", "performance") in `name`. nullptr when none.
  const StageResult* deciding_stage(std::string* name = nullptr) const;
};

}  // namespace magpie::kernel
