#pragma once
// `magpie replay TRACE (--op NAME[:SHAPES] | --top-k N) [-o DIR]`: runnable
// kernel configs for a trace's hot ops; the logic is src/replay (docs/REPLAY.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace magpie::app {

class ReplayCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  CLI::App* sub_ = nullptr;
  std::string trace_;
  std::vector<std::string> ops_;
  int top_k_ = 0;
  std::string output_dir_ = "./replay";
  bool json_ = false;
  unsigned threads_ = 0;
};

}  // namespace magpie::app
