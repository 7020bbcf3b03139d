#include "kernel/performance_rounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace magpie::kernel {

CuptiChoice run_performance_rounds(const Evaluator& ev, std::vector<Evaluation>& evals,
                                   const RoundProgress& on_measure) {
  const auto& opt = ev.options();
  const std::string& configured = opt.performance.cupti_kind;
  std::vector<Evaluation*> profiled;
  for (auto& e : evals) {
    if (ev.why_no_cupti(e).empty()) profiled.push_back(&e);
  }
  CuptiChoice choice;
  if (profiled.empty()) {
    // The top-level reason: that of a measured implementation when there is one.
    auto it = std::find_if(evals.begin(), evals.end(), [](const Evaluation& e) { return e.correct(); });
    if (it == evals.end()) it = evals.begin();
    choice = no_cupti_choice(configured, it == evals.end() ? "no implementations" : ev.why_no_cupti(*it));
  } else {
    std::vector<ProbeOutcome> probes;
    if (needs_cupti_probe(configured, true)) {
      for (auto* e : profiled) {
        if (opt.verbose) std::cerr << fmt::format("[{}] CUPTI probe round (concurrent)\n", e->spec.id);
        ProbeOutcome p{e->spec.id, ev.measure_probe(*e), 0, 0, 0};
        if (p.finished) {
          const auto& probe = e->rounds.back();
          p.cross_stream_overlap_ns = probe.cross_stream_overlap_ns;
          p.timed_kernels = probe.timed_kernels;
          p.timed_blocks = probe.timed_blocks;
        }
        probes.push_back(std::move(p));
      }
    }
    choice = choose_cupti_kind(configured, probes);
    if (opt.verbose) std::cerr << describe(choice) << "\n";
  }
  const bool timing = opt.check_performance && opt.performance_unavailable.empty();
  for (int r = 0; r < opt.performance.rounds && timing; ++r) {
    for (size_t j = 0; j < evals.size(); ++j) {
      auto& e = evals[(j + static_cast<size_t>(r)) % evals.size()];
      if (opt.verbose && e.correct()) std::cerr << fmt::format("[{}] performance round {}\n", e.spec.id, r);
      if (on_measure && e.correct())
        on_measure(r, opt.performance.rounds, static_cast<size_t>(r) * evals.size() + j,
                   static_cast<size_t>(opt.performance.rounds) * evals.size(), e.spec.id);
      ev.measure_round(e, r, choice.kind);
    }
  }
  for (auto& e : evals) {
    auto why = ev.why_no_cupti(e);
    e.cupti = why.empty() ? choice : no_cupti_choice(configured, why);
  }
  return choice;
}

}  // namespace magpie::kernel
