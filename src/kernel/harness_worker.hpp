#pragma once
// A persistent Python harness worker (python/magpie_bench/worker.py): one
// process per implementation for a whole compare, so imports, the CUDA
// context, compilation and the callables are set up once and the correctness
// run and every performance round are requests to it. Requests and answers are
// JSON lines over two FIFOs in the implementation's folder (the worker's own
// output goes to its log). The worker keeps its own process group; a request
// that times out, is cancelled or finds the worker dead kills the whole group,
// so a crash or a hang costs that implementation only.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <vector>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/child_process.hpp"
#include "kernel/command.hpp"

namespace magpie::kernel {

struct WorkerReply {
  bool ok = false;             // the worker answered (the answer may still report the user's error)
  nlohmann::json answer;       // its JSON line, when ok
  std::string failure;         // otherwise: "timed out after 30.0 s", "worker ended (exit 3)", ...
  bool timed_out = false;
  bool cancelled = false;
  double wall_seconds = 0;
};

class HarnessWorker {
 public:
  HarnessWorker() = default;
  ~HarnessWorker();
  HarnessWorker(const HarnessWorker&) = delete;
  HarnessWorker& operator=(const HarnessWorker&) = delete;

  // Starts `argv` (the harness in worker mode, without --requests/--responses:
  // added here) in `cwd` with `env`, its output appended to `log`, FIFOs in
  // `dir`; waits up to `timeout` for its ready line. The reply says why not.
  WorkerReply start(Command argv, const std::filesystem::path& cwd, const std::map<std::string, std::string>& env,
                    const std::filesystem::path& log, const std::filesystem::path& dir,
                    std::chrono::milliseconds timeout, const std::atomic<bool>* cancel);
  // start() in two halves, so that several workers start side by side: launch
  // returns at once (failure set when it could not even spawn); await_ready waits.
  WorkerReply launch(Command argv, const std::filesystem::path& cwd, const std::map<std::string, std::string>& env,
                     const std::filesystem::path& log, const std::filesystem::path& dir);
  WorkerReply await_ready(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel);
  bool launched() const { return alive_ && !ready_; }
  // One request ("id" is set here); the worker is killed unless it answers in time.
  WorkerReply request(nlohmann::json req, std::chrono::milliseconds timeout, const std::atomic<bool>* cancel);
  // Asks it to exit, then ends its group (a short grace).
  void stop();
  // Only asks it to exit (once), without waiting: several workers then wind down
  // (CUDA context, interpreter) side by side before each one's stop().
  void ask_exit();
  bool alive() const { return alive_; }
  int starts() const { return starts_; }
  const std::filesystem::path& log() const { return log_; }

 private:
  WorkerReply await_line(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel);
  void end(const char* why);
  std::unique_ptr<ChildProcess> child_;
  int requests_fd_ = -1;
  int responses_fd_ = -1;
  std::string pending_;  // bytes read past the last full line
  std::filesystem::path log_;
  std::vector<std::filesystem::path> fifos_;  // removed when the worker ends
  bool alive_ = false;
  bool ready_ = false;
  bool exit_asked_ = false;
  int next_id_ = 1;
  int starts_ = 0;
};

}  // namespace magpie::kernel
