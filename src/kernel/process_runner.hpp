#pragma once
// Runs one command in its own process group, output to a log file, with a
// timeout that kills the whole group (a testcase's children too).
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "kernel/command.hpp"

namespace magpie::kernel {

struct ProcessSpec {
  Command argv;
  std::filesystem::path cwd;                  // empty = current directory
  std::map<std::string, std::string> env;     // added to (or replacing) the inherited environment
  std::chrono::milliseconds timeout{300000};
  std::filesystem::path log_path;             // stdout and stderr, appended; empty = discarded
  const std::atomic<bool>* cancel = nullptr;  // set → the group is killed as on a timeout
};

struct ProcessResult {
  int exit_code = -1;     // valid when exited normally
  int term_signal = 0;    // signal that ended it, if any
  bool timed_out = false;
  bool cancelled = false;
  bool spawn_failed = false;  // could not start (command not found, bad cwd)
  double wall_seconds = 0;
  bool ok() const { return !timed_out && !spawn_failed && term_signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit 1", "timed out after 3.0 s", "killed by signal 9", ...
};

ProcessResult run_process(const ProcessSpec& spec);

// Reads the last `max_bytes` of a log, for error messages.
std::string log_tail(const std::filesystem::path& log, size_t max_bytes = 2000);

}  // namespace magpie::kernel
