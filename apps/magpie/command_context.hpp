#pragma once
// The JobContext every CLI command hands its job: face "cli", the command line
// as typed (recorded in the results store), and whether stderr is a terminal.
#include <atomic>
#include <string>

#include "jobs/job_context.hpp"

namespace magpie::app {

// Set once by main() from argv.
void set_command_line(int argc, char** argv);
jobs::JobContext command_context(bool verbose);

// Set by the first Ctrl-C while an InterruptScope is alive; a second Ctrl-C
// ends the process at once.
const std::atomic<bool>& interrupt_flag();
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  void (*previous_)(int);
};

}  // namespace magpie::app
