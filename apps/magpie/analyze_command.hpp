#pragma once
// `magpie analyze` and `magpie compare`: kernels from files or a kernel config
// YAML through compile → correctness → performance, reports in a workspace,
// and a Markdown table on stdout.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kernel/kernel_config.hpp"

namespace magpie::app {

class AnalyzeCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return (analyze_ && analyze_->parsed()) || (compare_ && compare_->parsed()); }
  int run(bool verbose);

 private:
  struct Flags {
    std::vector<std::string> files;
    std::string kernel_config;
    std::string testcase;
    std::string type = "hip";
    std::string compile_cmd;
    bool no_perf = false;
    bool no_latency = false;
    std::string latency_method = "auto";
    double latency_rep_ms = -1;  // <0 = the YAML's latency.rep_ms (default 20)
    std::string output_dir = "./results";
    size_t baseline = 0;
    bool fail_on_regression = false;
    bool strict = false;
    int rounds = 0;          // 0 = from the YAML (default 5)
    double threshold = -1;   // <0 = from the YAML (default 0.02)
    bool ncu = false;
    std::string kernel_filter;
    std::string cupti_kind;  // "" = from the YAML (default auto)
    bool html = false;
  };
  void add_common(CLI::App* sub, Flags& f, bool compare);
  int run_mode(Flags& f, bool compare, bool verbose);

  CLI::App* analyze_ = nullptr;
  CLI::App* compare_ = nullptr;
  Flags analyze_flags_, compare_flags_;
};

}  // namespace magpie::app
