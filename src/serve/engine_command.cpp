#include "serve/engine_command.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace magpie::serve {

Framework parse_framework(const std::string& name) {
  if (name == "vllm") return Framework::kVllm;
  if (name == "sglang") return Framework::kSglang;
  if (name == "atom") return Framework::kAtom;
  throw Error(ErrorKind::kUsage,
              fmt::format("unknown framework '{}': use vllm, sglang or atom", name));
}

const char* to_string(Framework f) {
  switch (f) {
    case Framework::kVllm:
      return "vllm";
    case Framework::kSglang:
      return "sglang";
    case Framework::kAtom:
      return "atom";
  }
  return "?";
}

std::vector<std::string> engine_argv(const EngineSpec& s) {
  std::vector<std::string> a;
  auto port = std::to_string(s.port);
  auto tp = std::to_string(s.tp);
  switch (s.framework) {
    case Framework::kVllm:
      a = {s.vllm_executable,        "serve", s.model, "--host", s.host, "--port", port,
           "--tensor-parallel-size", tp};
      if (s.gpu)
        a.insert(a.end(), {"--gpu-memory-utilization",
                           s.gpu_memory_utilization.empty() ? "0.95" : s.gpu_memory_utilization});
      if (!s.max_model_len.empty()) a.insert(a.end(), {"--max-model-len", s.max_model_len});
      if (!s.revision.empty()) a.insert(a.end(), {"--revision", s.revision});
      a.push_back("--trust-remote-code");
      break;
    case Framework::kSglang:
      a = {s.python,
           "-m",
           "sglang.launch_server",
           "--model-path",
           s.model,
           "--host",
           s.host,
           "--port",
           port,
           "--trust-remote-code",
           "--tensor-parallel-size",
           tp};
      if (!s.revision.empty()) a.insert(a.end(), {"--revision", s.revision});
      break;
    case Framework::kAtom:
      a = {s.python,        "-m", "atom.entrypoints.openai_server", "--model", s.model, "-tp", tp,
           "--server-port", port};
      break;
  }
  a.insert(a.end(), s.extra_args.begin(), s.extra_args.end());
  return a;
}

std::string profiler_dir_env(Framework f) {
  switch (f) {
    case Framework::kVllm:
      return "VLLM_TORCH_PROFILER_DIR";
    case Framework::kSglang:
      return "SGLANG_TORCH_PROFILER_DIR";
    case Framework::kAtom:
      return "ATOM_TORCH_PROFILER_DIR";
  }
  return {};
}

std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        cur.push_back(c);
    } else if (c == '\'' || c == '"') {
      quote = c;
      have = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (have) out.push_back(std::move(cur));
      cur.clear();
      have = false;
    } else {
      cur.push_back(c);
      have = true;
    }
  }
  if (quote) throw Error(ErrorKind::kUsage, fmt::format("unbalanced quote in arguments: {}", s));
  if (have) out.push_back(std::move(cur));
  return out;
}


}  // namespace magpie::serve
