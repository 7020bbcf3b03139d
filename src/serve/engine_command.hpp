#pragma once
// The launch line of each engine, with Magpie's defaults (docs/MAGPIE_COMPATIBILITY.md §3), and
// the profiler directory variable each one reads.
#include <map>
#include <string>
#include <vector>

#include "core/child_process.hpp"

namespace magpie::serve {

enum class Framework { kVllm, kSglang, kAtom };
Framework parse_framework(const std::string& name);  // throws Error(kUsage)
const char* to_string(Framework f);

struct EngineSpec {
  Framework framework = Framework::kVllm;
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8000;
  int tp = 1;
  std::string max_model_len;            // empty = engine default
  std::string gpu_memory_utilization;   // vLLM's fraction; empty = 0.95
  std::string revision;                 // envs.MODEL_REVISION: the engine's --revision; empty = none
  std::vector<std::string> extra_args;  // EXTRA_{VLLM,SGLANG,ATOM}_ARGS, split on whitespace
  std::string python = "python3";       // for sglang/atom module launches
  std::string vllm_executable = "vllm";
  bool gpu = true;  // --gpu-memory-utilization only means something on a GPU
};

std::vector<std::string> engine_argv(const EngineSpec& spec);

// Environment variable naming the torch profiler output directory.
std::string profiler_dir_env(Framework f);

// Splits a shell-like argument string on whitespace, honouring simple quotes.
std::vector<std::string> split_args(const std::string& s);

// Reports and logs quote commands with magpie::shell_join (core/child_process.hpp).
using magpie::shell_join;

}  // namespace magpie::serve
