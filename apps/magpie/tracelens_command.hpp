#pragma once
// `magpie tracelens`: TraceLens-style stage reports (perf models, roofline)
// from one profiler trace; the logic is analysis::run_tracelens.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace magpie::app {

class TraceLensCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  CLI::App* sub_ = nullptr;
  std::string trace_;
  std::string mode_ = "inference";
  std::string stages_ = "all";
  std::string export_format_ = "csv";
  std::string gpu_arch_;
  std::string gpu_arch_file_;
  std::string capture_dir_;
  int64_t isl_ = -1, osl_ = -1, conc_ = -1;
  std::string output_dir_ = "./results";
  bool include_python_ = false;
  unsigned threads_ = 0;
  bool html_ = false;
};

}  // namespace magpie::app
