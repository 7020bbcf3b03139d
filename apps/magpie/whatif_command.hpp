#pragma once
// `magpie whatif TRACE [--scenario S ...] [--json] [-o DIR]`: the critical
// path of each iteration and what a change would buy end to end, by
// re-timing the trace's dependency graph; the logic is src/analysis
// (critical_path*) and src/jobs/critical_path_jobs (docs/CRITICAL_PATH.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace magpie::app {

class WhatIfCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  CLI::App* sub_ = nullptr;
  std::vector<std::string> traces_;
  std::vector<std::string> scenarios_;
  std::string output_dir_;
  bool json_ = false;
  unsigned threads_ = 0;
  double measured_step_us_ = 0;
  double kernel_overhead_us_ = 0;
  double graph_gap_us_ = -1;  // -1: not given
};

}  // namespace magpie::app
