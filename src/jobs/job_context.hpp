#pragma once
// What every job takes besides its request: who asked (the CLI or the MCP
// server), where to report progress, how to be cancelled, and whether to
// record the run in the results store.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace magpie::jobs {

struct Progress {
  double done = 0;
  std::optional<double> total;
  std::string message;
};

struct JobContext {
  std::string face = "cli";   // "cli" | "mcp"; recorded with the run
  std::string command_line;   // recorded with the run
  // Called from the job's thread (or a worker it started); may be empty.
  std::function<void(const Progress&)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set → the job kills what it runs and stops
  // Whole lines a job follows from elsewhere while it runs (a Ray job's log),
  // with what they belong to (the job's label); may be empty (not followed).
  std::function<void(const std::string& source, const std::string& lines)> log;
  bool console = false;  // a terminal watches stderr: engines may print live lines there
  bool verbose = false;  // more detail on stderr
  bool record = true;                         // write the run to the results store
  std::filesystem::path store_path;           // empty = the store's default path

  void report(double done, std::optional<double> total, const std::string& message) const {
    if (progress) progress({done, total, message});
  }
  bool cancelled() const { return cancel && cancel->load(); }
};

}  // namespace magpie::jobs
