#include "command_context.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include "kernel/command.hpp"

namespace magpie::app {

namespace {
std::string g_command_line;
bool g_progress_lines = false;
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

void set_progress_lines(bool on) { g_progress_lines = on; }

std::unique_ptr<ProgressLine> attach_progress(jobs::JobContext& context) {
  auto line = std::make_unique<ProgressLine>(
      progress_style(::isatty(STDERR_FILENO) != 0, g_progress_lines || context.verbose), std::cerr);
  if (line->active()) {
    ProgressLine* p = line.get();
    context.progress = [p](const jobs::Progress& x) { p->update(x.done, x.total, x.message); };
  }
  return line;
}

void attach_ingest_progress(trace::IngestOptions& ingest, ProgressLine& line) {
  if (!line.active()) return;
  ingest.on_bytes = [p = &line](const std::string& origin, size_t done, size_t total) {
    p->update(static_cast<double>(done), static_cast<double>(total),
              fmt::format("reading {}: {:.0f} of {:.0f} MB", std::filesystem::path(origin).filename().string(),
                          static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6));
  };
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
