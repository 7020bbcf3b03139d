#pragma once
// Runs the pipeline for each implementation: compile → correctness → performance.
// Every step runs in its own process group with a timeout (process_runner);
// a failed stage marks the later ones SKIPPED. Performance is measured in
// rounds so that compare can interleave implementations (drift hits all alike).
#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "kernel/evaluation.hpp"
#include "kernel/gpu_info.hpp"
#include "kernel/harness_worker.hpp"
#include "kernel/kernel_config.hpp"

namespace magpie::kernel {

struct EvaluatorOptions {
  PerformanceSettings performance;
  CorrectnessSettings correctness;
  LatencySettings latency;
  bool check_performance = true;  // --no-perf clears it
  bool check_latency = true;      // --no-latency clears it
  // Why timing cannot run here (no GPU), "" when it can: correctness still
  // runs; performance is SKIPPED with this as its cause, and no round runs.
  std::string performance_unavailable;
  std::filesystem::path workspace;
  std::filesystem::path python_dir;  // holds magpie_bench/
  std::filesystem::path cupti_lib;   // libmagpie_cupti.so, "" = none
  std::string python = "python3";
  GpuInfo gpu;
  // From gpu_selection (CUDA_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES, and
  // CUDA_DEVICE_ORDER): set for every child, over a kernel's own env.
  std::map<std::string, std::string> gpu_env;
  const KernelSpec* baseline = nullptr;  // numerical reference for bench_target checks
  bool verbose = false;
  // A persistent harness worker per Python implementation (harness_worker.hpp);
  // false (MAGPIE_HARNESS_WORKER=0) runs a new process per correctness run and round.
  bool harness_worker = true;
  const std::atomic<bool>* cancel = nullptr;  // set → running commands are killed, later ones skipped
};

// Where the built-in pieces live: $MAGPIE_PYTHON_DIR / $MAGPIE_CUPTI_LIB, else
// beside the executable, else the build tree this binary came from.
std::filesystem::path default_python_dir();
std::filesystem::path default_cupti_lib();

// `nvcc --list-gpu-arch` output → sm_XX of its oldest compute_XX ("" when none
// is listed): the target nvcc builds when given none.
std::string oldest_sm_arch(std::string_view nvcc_list_gpu_arch);
// ${MAGPIE_CUDA_ARCH} without a GPU: oldest_sm_arch of the nvcc on PATH, asked
// once; "" without nvcc (the command is then refused, naming the variable).
std::string default_cuda_arch();
// The interpreter that runs python/magpie_bench: $MAGPIE_PYTHON, else the
// YAML's latency.python, else the first python3 on PATH.
std::string harness_python(const LatencySettings& latency);

// The variables Magpie adds for commands and $VAR expansion:
// MAGPIE_CUDA_ARCH / MAGPIE_GPU_ARCH (e.g. sm_90), MAGPIE_WORKSPACE.
VarLookup magpie_lookup(const GpuInfo& gpu, const std::filesystem::path& workspace);

class Evaluator {
 public:
  explicit Evaluator(EvaluatorOptions options);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;
  // Creates <workspace>/<id>/ and runs compile and correctness.
  void prepare(Evaluation& e) const;
  // One performance run (no-op unless correctness succeeded and perf is on).
  // `cupti_kind` goes to MAGPIE_CUPTI_KIND when the CUPTI library is loaded;
  // "" = performance.cupti_kind, auto meaning the library's default (concurrent).
  void measure_round(Evaluation& e, int round, const std::string& cupti_kind = "") const;
  // cupti_kind auto's probe: a concurrent round written as *_probe.*, kept out
  // of the samples and the kernel table. True when its command finished.
  bool measure_probe(Evaluation& e) const;
  // Why `e`'s performance rounds run without the CUPTI library; "" when they run with it.
  std::string why_no_cupti(const Evaluation& e) const;
  // Sets the performance and latency states, the ncu pass and the roofline floor.
  void finish(Evaluation& e) const;
  const EvaluatorOptions& options() const { return opt_; }
  // Ends `e`'s harness worker (or all of them): after its last round, or when it failed.
  void release_worker(const Evaluation& e) const;
  void release_workers() const;
  // Launches the harness workers of these implementations side by side (under
  // `cupti_kind`, "" = the first round's), so their start-ups overlap; each is
  // awaited when first asked. Not for one with a compile step (it builds first).
  void prestart_workers(std::vector<Evaluation>& evals, const std::string& cupti_kind = "") const;
  // How many times `e`'s worker was started (0: none; more than 1: restarted for another CUPTI kind).
  int worker_starts(const Evaluation& e) const;

 private:
  void compile(Evaluation& e) const;
  void check_correctness(Evaluation& e) const;
  void ncu_pass(Evaluation& e) const;
  bool run_round(Evaluation& e, int round, bool probe, const std::string& cupti_kind) const;
  std::map<std::string, std::string> env_for(const Evaluation& e) const;
  Command harness_command(const Evaluation& e, const std::string& mode, const std::filesystem::path& json_out) const;
  bool uses_worker(const Evaluation& e) const;
  bool cupti_applies(const Evaluation& e) const;
  // `e`'s worker running under `cupti_kind` (restarted when it ran under another), or
  // nullptr with the cause in `st`.
  HarnessWorker* worker_for(Evaluation& e, const std::string& cupti_kind, StageResult& st) const;
  std::string initial_kind() const;
  struct WorkerSlot;
  // Asks a running worker to switch its CUPTI kind in place (no new imports or
  // context); false when it cannot (an older harness or library): then it is restarted.
  bool switch_cupti_kind(WorkerSlot& slot, const std::string& want) const;
  Command worker_launch(Evaluation& e, const std::string& want, std::map<std::string, std::string>& env) const;
  bool ask_worker(Evaluation& e, const nlohmann::json& req, const std::string& cupti_kind, double timeout_s,
                  StageResult& st, const char* stage_name, nlohmann::json& answer) const;
  EvaluatorOptions opt_;
  struct WorkerSlot {
    std::unique_ptr<HarnessWorker> worker;
    std::string cupti_kind;
    std::string command;  // as launched by prestart_workers, for the stage's commands
  };
  mutable std::map<std::string, WorkerSlot> workers_;  // by implementation id
  // Released workers asked to exit and not yet reaped: they wind down while the
  // others are still measured, and are waited for in release_workers().
  mutable std::vector<std::unique_ptr<HarnessWorker>> retiring_;
};

}  // namespace magpie::kernel
