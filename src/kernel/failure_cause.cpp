#include "kernel/failure_cause.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace magpie::kernel {

namespace {

constexpr size_t kMaxCause = 300;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = end + 1;
  }
  return out;
}

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

bool contains_nocase(std::string_view s, std::string_view what) {
  auto it = std::search(s.begin(), s.end(), what.begin(), what.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != s.end();
}

std::string one_line(std::string_view s) {
  std::string out(trim(s));
  return out.size() > kMaxCause ? out.substr(0, kMaxCause - 3) + "..." : out;
}

// The exception line of the last traceback: its first unindented line.
std::optional<std::string> python_exception(const std::vector<std::string_view>& lines) {
  size_t last = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("Traceback (most recent call last):", 0) == 0) last = i;
  if (last == lines.size()) return std::nullopt;
  for (size_t i = last + 1; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (l.empty() || l.front() == ' ' || l.front() == '\t') continue;
    return one_line(l);
  }
  return std::nullopt;
}

// {"error": "..."} on the harness's latency line.
std::optional<std::string> latency_error(const std::vector<std::string_view>& lines) {
  static constexpr std::string_view kPrefix = "MAGPIE_LATENCY_JSON:";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    auto pos = it->find(kPrefix);
    if (pos == std::string_view::npos) continue;
    auto j = nlohmann::json::parse(it->substr(pos + kPrefix.size()), nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) return one_line(j["error"].get<std::string>());
    return std::nullopt;  // the last latency line had no error
  }
  return std::nullopt;
}

// The harness's own errors (`magpie_bench: <error>`), not its summary line.
std::optional<std::string> harness_error(const std::vector<std::string_view>& lines) {
  static constexpr std::string_view kPrefix = "magpie_bench: ";
  for (auto l : lines) {
    if (l.rfind(kPrefix, 0) != 0) continue;
    l.remove_prefix(kPrefix.size());
    if (l.rfind("correctness ", 0) == 0) continue;
    return one_line(l);
  }
  return std::nullopt;
}

bool compiler_error(std::string_view l) {
  return contains(l, "error:") || contains(l, "fatal error") || contains(l, "nvcc fatal") ||
         contains(l, "ld: ") || contains(l, "undefined reference to");
}

}  // namespace

std::string cause_from_output(std::string_view output) {
  auto lines = lines_of(output);
  if (auto c = python_exception(lines)) return *c;
  if (auto c = latency_error(lines)) return *c;
  if (auto c = harness_error(lines)) return *c;
  // The first compiler error is the root; collect2's summary only names ld.
  std::optional<std::string> collect2;
  for (auto l : lines) {
    if (!compiler_error(l)) continue;
    if (trim(l).rfind("collect2:", 0) == 0) {
      if (!collect2) collect2 = one_line(l);
      continue;
    }
    return one_line(l);
  }
  if (collect2) return *collect2;
  for (auto l : lines)
    if (contains_nocase(l, "error") || contains_nocase(l, "fatal")) return one_line(l);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!trim(*it).empty()) return one_line(*it);
  return "";
}

std::string fix_for(std::string_view cause, const FailureContext& ctx) {
  static constexpr std::string_view kNoModule = "No module named '";
  if (auto pos = cause.find(kNoModule); pos != std::string_view::npos) {
    std::string_view rest = cause.substr(pos + kNoModule.size());
    std::string module(rest.substr(0, rest.find('\'')));
    module = module.substr(0, module.find('.'));  // torch.cuda → torch
    std::string python = ctx.interpreter.empty() ? "the Python interpreter" : ctx.interpreter;
    std::string where = ctx.interpreter_path.empty() ? "" : fmt::format(" ({})", ctx.interpreter_path);
    if (ctx.harness) {
      return fmt::format(
          "the harness ran {}{}, which lacks {}: install {} for it, or choose an interpreter that has it with "
          "MAGPIE_PYTHON=/path/to/python or latency.python in the kernel YAML (default: the first python3 on PATH)",
          python, where, module, module);
    }
    return fmt::format("the command ran {}{}, which lacks {}: install {} for it, or call an interpreter that has it",
                       python, where, module, module);
  }
  if (contains(cause, "MAGPIE_CUDA_ARCH") || contains(cause, "MAGPIE_GPU_ARCH")) {
    return "set MAGPIE_GPU_ARCH to the target GPU's architecture (e.g. MAGPIE_GPU_ARCH=sm_90, or gfx942 for AMD)";
  }
  const bool no_gpu = contains(cause, "timing needs a CUDA GPU") || contains_nocase(cause, "no CUDA GPUs are available") ||
                      contains_nocase(cause, "driver version is insufficient") ||
                      contains_nocase(cause, "no CUDA-capable device") || contains(cause, "Found no NVIDIA driver") ||
                      contains_nocase(cause, "no ROCm-capable device") || contains(cause, "hipErrorNoDevice");
  if (no_gpu) {
    return ctx.stage == "performance"
               ? "run on a machine with a GPU and its driver, or pass --no-perf to check correctness only"
               : "run on a machine with a GPU and its driver";
  }
  if (contains(cause, "timed out after")) {
    return ctx.stage == "correctness" ? "raise correctness.timeout_seconds in the kernel YAML, or make the check faster"
                                      : "raise performance.timeout_seconds in the kernel YAML, or make the run faster";
  }
  return "";
}

}  // namespace magpie::kernel
