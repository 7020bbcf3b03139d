#pragma once
// `magpie --gpu-info [--json]`: a global flag, as in Magpie. NVML and the
// writers are in src/gpu; this file adds what the CLI knows about tools
// (compiler and profiler paths) and prints.
#include <CLI/CLI.hpp>

namespace magpie::app {

class GpuInfoCommand {
 public:
  void register_with(CLI::App& app);  // adds --gpu-info and --json (which needs --gpu-info)
  bool requested() const { return gpu_info_; }
  int run() const;  // always 0: "no GPU" is an answer, not an error

 private:
  bool gpu_info_ = false;
  bool json_ = false;
};

}  // namespace magpie::app
