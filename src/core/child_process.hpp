#pragma once
// Magpie's one way to run a child process: its own process group (so a kill
// reaches everything it forks), optional PR_SET_PDEATHSIG, stdout+stderr to a
// log or captured, a timeout and a cancel flag that kill the whole group.
// run_process() is the blocking form (kernel builds, testcases, tool probes);
// ChildProcess the long-lived one (engine servers).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace magpie {

struct ChildSpec {
  std::vector<std::string> argv;
  std::filesystem::path cwd;               // empty = current directory
  std::map<std::string, std::string> env;  // added to (or replacing) the inherited environment
  std::filesystem::path log_path;          // stdout and stderr, appended; empty = discarded
  // The child gets SIGTERM when the thread that started it ends (magpie killed):
  // an engine must not outlive magpie holding the GPU and the port.
  bool parent_death_signal = false;
  bool default_signals = false;  // reset SIGINT/SIGPIPE to default in the child
};

// A started child and its process group (pgid = pid).
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // terminates the group (5 s grace) if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Returns 0, or the errno of a failed exec/chdir/log open (the child is then reaped).
  int start(const ChildSpec& spec);
  bool running();  // reaps the child when it has exited
  bool exited() const { return exited_; }
  int wait_status() const { return status_; }  // waitpid status, valid once exited
  std::string exit_status() const;  // "exit 1", "killed by signal 9", or "" while running
  int pid() const { return pid_; }

  // SIGTERM to the group, then SIGKILL to it after `grace`. kLeader returns
  // once the leader is reaped (a testcase: leftovers are SIGKILLed by the
  // caller); kWholeGroup waits, within grace, until no member is left (an engine
  // whose workers must release the GPU before the next run starts).
  enum class Wait : uint8_t { kLeader, kWholeGroup };
  void terminate_group(std::chrono::milliseconds grace, Wait wait = Wait::kWholeGroup);
  void kill_group();  // SIGKILL to the group, no wait

 private:
  int pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

struct ProcessSpec {
  std::vector<std::string> argv;
  std::filesystem::path cwd;
  std::map<std::string, std::string> env;
  std::chrono::milliseconds timeout{300000};
  // stdout and stderr, appended after a "$ <command>" line; empty = discarded.
  std::filesystem::path log_path;
  const std::atomic<bool>* cancel = nullptr;  // set → the group is killed as on a timeout
  bool capture_output = false;                // also return stdout+stderr in ProcessResult::output
  bool parent_death_signal = false;
};

struct ProcessResult {
  int exit_code = -1;   // valid when exited normally
  int term_signal = 0;  // signal that ended it, if any
  bool timed_out = false;
  bool cancelled = false;
  bool spawn_failed = false;  // could not start (command not found, bad cwd)
  double wall_seconds = 0;
  std::string output;  // capture_output: stdout+stderr
  bool ok() const { return !timed_out && !spawn_failed && term_signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit 1", "timed out after 3.0 s", "killed by signal 9", ...
};

// Runs to completion, the timeout or the cancel flag; never throws for the child's failures.
ProcessResult run_process(const ProcessSpec& spec);

// The last `max_bytes` of a log, for error messages.
std::string log_tail(const std::filesystem::path& log, size_t max_bytes = 2000);

// Quotes an argv for logs and reports so it can be pasted into a shell: the
// one quoting rule of the project (serve, kernel and ray logs use it too).
std::string shell_quote(std::string_view arg);
std::string shell_join(const std::vector<std::string>& argv);

// Absolute path of an executable on PATH, or "" (e.g. find_on_path("hipcc")).
std::string find_on_path(const std::string& name);

}  // namespace magpie
