#include "command_context.hpp"

#include <unistd.h>

#include <csignal>

#include "kernel/command.hpp"

namespace magpie::app {

namespace {
std::string g_command_line;
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}
}  // namespace

const std::atomic<bool>& interrupt_flag() { return g_interrupted; }

InterruptScope::InterruptScope() {
  g_interrupted.store(false);
  previous_ = std::signal(SIGINT, on_sigint);
}

InterruptScope::~InterruptScope() { std::signal(SIGINT, previous_); }

void set_command_line(int argc, char** argv) {
  kernel::Command argv_list(argv, argv + argc);
  g_command_line = kernel::join_command(argv_list);
}

jobs::JobContext command_context(bool verbose) {
  jobs::JobContext c;
  c.face = "cli";
  c.command_line = g_command_line;
  c.console = ::isatty(STDERR_FILENO) != 0;
  c.verbose = verbose;
  return c;
}

}  // namespace magpie::app
