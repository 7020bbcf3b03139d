#include "kernel/evaluation.hpp"

#include <utility>

namespace magpie::kernel {

const char* to_string(StageState s) {
  switch (s) {
    case StageState::kSuccess: return "SUCCESS";
    case StageState::kFailed: return "FAILED";
    case StageState::kSkipped: return "SKIPPED";
  }
  return "SKIPPED";
}

std::vector<double> Evaluation::samples_ns() const {
  std::vector<double> all;
  for (const auto& r : rounds) {
    if (!r.probe) all.insert(all.end(), r.samples_ns.begin(), r.samples_ns.end());
  }
  return all;
}

std::vector<std::vector<double>> Evaluation::samples_by_round() const {
  std::vector<std::vector<double>> out;
  for (const auto& r : rounds) {
    if (!r.probe) out.push_back(r.samples_ns);
  }
  return out;
}

std::string Evaluation::timing_source() const {
  for (const auto& r : rounds) {
    if (!r.probe && !r.samples_ns.empty()) return r.source;
  }
  return "";
}

double Evaluation::score() const {
  if (compiling.state == StageState::kFailed || !correct()) return 0.0;
  if (performance.state == StageState::kFailed) return 0.5;
  return 1.0;
}

const StageResult* Evaluation::deciding_stage(std::string* name) const {
  const std::pair<const char*, const StageResult*> stages[] = {
      {"compile", &compiling}, {"correctness", &correctness}, {"performance", &performance}};
  for (const auto& [n, st] : stages) {
    if (st->state != StageState::kFailed && st->cause.empty()) continue;
    if (name) *name = n;
    return st;
  }
  return nullptr;
}

}  // namespace magpie::kernel
