#pragma once
// A long-running engine server as a child (core's ChildProcess): its own
// process group (so a shutdown reaches the workers it forks), SIGTERM when
// magpie dies, stdout+stderr to server.log.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/child_process.hpp"

namespace magpie::serve {

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();  // shuts the group down if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Throws Error(kNotFound) when the program cannot be started.
  void start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::filesystem::path& log_path);
  bool running() { return child_.running(); }  // reaps the child when it has exited
  std::string exit_status() const { return child_.exit_status(); }  // "" while running
  int pid() const { return child_.pid(); }

  // SIGTERM to the group, then SIGKILL after `grace`.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(15)) {
    child_.terminate_group(grace);
  }
  void kill() { child_.kill_group(); }  // SIGKILL to the group, no grace

 private:
  ChildProcess child_;  // core's runner: own group, PR_SET_PDEATHSIG, log
};

// A TCP port nothing listens on now (bound to 127.0.0.1:0 and released).
int free_port();

// The last `lines` lines of a log, for error messages.
std::string log_tail_lines(const std::filesystem::path& log, size_t lines = 30);

}  // namespace magpie::serve
