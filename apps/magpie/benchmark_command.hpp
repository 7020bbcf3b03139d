#pragma once
// `magpie benchmark`: a serving benchmark (serve_options.hpp), or with
// --trace-dir the standalone gap analysis.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "serve_options.hpp"

namespace magpie::app {

class BenchmarkCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  int run_gap_analysis(bool verbose);
  CLI::App* sub_ = nullptr;
  std::string framework_;
  std::string trace_dir_;
  std::string output_dir_ = "./results";
  size_t top_k_ = 20;
  double start_pct_ = 0, end_pct_ = 100, min_duration_us_ = 0;
  std::vector<std::string> categories_{"kernel", "gpu"};
  std::vector<std::string> ignore_categories_{"gpu_user_annotation", "user_annotation"};
  bool no_rank_csv_ = false;
  bool find_kernel_sources_ = false;
  std::vector<std::string> kernel_source_repos_;
  bool include_python_ = false;
  unsigned threads_ = 0;
  bool html_ = false;
  ServeOptions serve_;
  CLI::Option* output_dir_option_ = nullptr;
};

}  // namespace magpie::app
