#pragma once
// The JobContext every CLI command hands its job: face "cli", the command line
// as typed (recorded in the results store), and whether stderr is a terminal.
#include <atomic>
#include <memory>
#include <string>

#include "core/progress_line.hpp"
#include "jobs/job_context.hpp"
#include "trace/kineto_reader.hpp"

namespace magpie::app {

// Set once by main() from argv.
void set_command_line(int argc, char** argv);
jobs::JobContext command_context(bool verbose);

// --progress: plain progress lines on stderr even when it is not a terminal.
void set_progress_lines(bool on);
// The progress renderer for a command (a live line on a terminal, plain lines
// with --progress or -v, else off), hooked to `context.progress`. Keep it alive
// for the job; destroy (or finish()) it before printing the results.
std::unique_ptr<ProgressLine> attach_progress(jobs::JobContext& context);
// Bytes parsed while a large trace is read, on the same renderer.
void attach_ingest_progress(trace::IngestOptions& ingest, ProgressLine& line);

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
