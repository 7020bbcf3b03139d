#pragma once
// `magpie trace-diff BEFORE AFTER [-o DIR] [--json]`: a structural diff of two
// traces of one workload and the end-to-end change explained by the critical
// path; the logic is src/analysis/trace_diff and src/jobs/trace_diff_jobs
// (docs/TRACE_DIFF.md).
#include <CLI/CLI.hpp>
#include <string>

namespace magpie::app {

class TraceDiffCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  CLI::App* sub_ = nullptr;
  std::string before_, after_;
  std::string output_dir_;
  bool json_ = false;
  size_t rows_ = 15;
  int rank_ = -1;
  unsigned threads_ = 0;
};

}  // namespace magpie::app
