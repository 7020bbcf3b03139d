#include "kernel/performance_rounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace magpie::kernel {

namespace {

// The harness or the rounds rejected it (an integrity rule): no more rounds change that.
bool rejected(const Evaluation& e) {
  return std::any_of(e.rounds.begin(), e.rounds.end(),
                     [](const RoundMeasurement& m) { return !m.probe && !m.integrity_violations.empty(); });
}

bool has_samples(const Evaluation& e) {
  return std::any_of(e.rounds.begin(), e.rounds.end(),
                     [](const RoundMeasurement& m) { return !m.probe && !m.samples_ns.empty(); });
}

// cupti_kind auto without a probe pass: what the first (concurrent) round of each
// profiled implementation showed.
std::vector<ProbeOutcome> first_round_outcomes(const std::vector<Evaluation*>& profiled, int round) {
  std::vector<ProbeOutcome> out;
  for (const auto* e : profiled) {
    ProbeOutcome p{e->spec.id, false, 0, 0, 0};
    if (!e->rounds.empty() && e->rounds.back().round == round && !e->rounds.back().samples_ns.empty()) {
      const auto& m = e->rounds.back();
      p.finished = true;
      p.cross_stream_overlap_ns = m.cross_stream_overlap_ns;
      p.timed_kernels = m.timed_kernels;
      p.timed_blocks = m.timed_blocks;
    }
    out.push_back(std::move(p));
  }
  return out;
}

// serial chosen: the first round ran with concurrent and is kept out of the samples, as a probe was.
void demote_to_probe(Evaluation& e, int round) {
  for (auto& m : e.rounds) {
    if (m.round != round || m.probe) continue;
    m.probe = true;
    m.round = -1;
  }
  e.kernels.clear();  // the kernel table holds measured rounds only: this was the first
  e.latency_report.reset();
}

}  // namespace

std::optional<SpeedupEstimate> settled_verdict(const Evaluation& base, const Evaluation& cand,
                                               const VerdictSettings& settings) {
  const auto b = base.samples_by_round(), c = cand.samples_by_round();
  auto est = compare_samples(b, c, settings);
  if (est.verdict == Verdict::kAmbiguous) return std::nullopt;
  return est;
}

CuptiChoice run_performance_rounds(const Evaluator& ev, std::vector<Evaluation>& evals,
                                   const RoundProgress& on_measure, const RoundsPlan& plan,
                                   const VerdictSettled& on_settled) {
  const auto& opt = ev.options();
  const auto& perf = opt.performance;
  const std::string& configured = perf.cupti_kind;
  std::vector<Evaluation*> profiled;
  for (auto& e : evals) {
    if (ev.why_no_cupti(e).empty()) profiled.push_back(&e);
  }
  CuptiChoice choice;
  bool deciding = false;  // auto: the first round decides
  if (profiled.empty()) {
    // The top-level reason: that of a measured implementation when there is one.
    auto it = std::find_if(evals.begin(), evals.end(), [](const Evaluation& e) { return e.correct(); });
    if (it == evals.end()) it = evals.begin();
    choice = no_cupti_choice(configured, it == evals.end() ? "no implementations" : ev.why_no_cupti(*it));
  } else if (needs_cupti_probe(configured, true)) {
    deciding = true;
    choice = choose_cupti_kind(configured, {});  // concurrent until the first round is read
  } else {
    choice = choose_cupti_kind(configured, {});
  }
  const bool timing = opt.check_performance && opt.performance_unavailable.empty();
  const size_t n = evals.size();
  const bool adaptive = !perf.rounds_exact && plan.baseline && *plan.baseline < n;
  int planned = adaptive ? perf.min_rounds : perf.rounds;
  const int cap = adaptive ? std::max(perf.max_rounds, perf.min_rounds) : perf.rounds;
  std::vector<bool> done(n, false);  // settled candidates are not measured again
  auto active = [&](size_t i) { return !done[i] && evals[i].correct(); };
  size_t step = 0;
  int measured = 0;
  for (int r = 0; timing && measured < planned; ++r) {
    for (size_t j = 0; j < n; ++j) {
      const size_t idx = (j + static_cast<size_t>(r)) % n;
      auto& e = evals[idx];
      if (done[idx]) continue;
      if (opt.verbose && e.correct()) std::cerr << fmt::format("[{}] performance round {}\n", e.spec.id, r);
      if (on_measure && e.correct()) {
        // The measurements the current plan still holds, this one included: with the
        // per-measurement time measured so far, an honest ETA for this phase.
        size_t left = 0, per_round = 0;
        for (size_t k = 0; k < n; ++k) {
          per_round += active(k) ? 1 : 0;
          if (k >= j && active((k + static_cast<size_t>(r)) % n)) ++left;
        }
        const size_t later = per_round * static_cast<size_t>(std::max(planned - measured - 1, 0));
        on_measure(measured, planned, step, step + left + later, e.spec.id);
      }
      if (e.correct()) ++step;
      ev.measure_round(e, r, deciding ? std::string("concurrent") : choice.kind);
    }
    if (deciding) {
      deciding = false;
      choice = choose_cupti_kind(configured, first_round_outcomes(profiled, r));
      if (opt.verbose) std::cerr << describe(choice) << "\n";
      if (choice.kind != "concurrent") {
        for (auto* e : profiled) demote_to_probe(*e, r);
        ev.prestart_workers(evals, choice.kind);  // their restarts with serial overlap
        continue;  // that round was the probe: the measured rounds start now
      }
    }
    ++measured;
    if (!adaptive) continue;
    const auto& base = evals[*plan.baseline];
    if (!base.correct() || rejected(base)) break;  // no verdicts to wait for
    bool open = false;
    for (size_t i = 0; i < n; ++i) {
      if (i == *plan.baseline || done[i]) continue;
      auto& e = evals[i];
      std::optional<SpeedupEstimate> est;
      bool settled = !e.correct() || rejected(e);
      if (!settled && measured >= perf.min_rounds) {
        if (!has_samples(e)) {
          settled = true;  // every round failed: more rounds will not give it a verdict
        } else if ((est = settled_verdict(base, e, plan.verdict))) {
          settled = true;
        }
      }
      if (!settled) {
        open = true;
        continue;
      }
      done[i] = true;
      ev.release_worker(e);  // not measured again: its GPU memory goes back now
      if (on_settled && e.correct()) on_settled(e, est, measured);
    }
    if (open && measured == planned && planned < cap) ++planned;
  }
  if (adaptive && on_settled && timing) {
    // Still AMBIGUOUS at the cap: said too, so every candidate gets its line.
    for (size_t i = 0; i < n; ++i) {
      if (i == *plan.baseline || done[i] || !evals[i].correct()) continue;
      on_settled(evals[i], std::nullopt, measured);
    }
  }
  for (auto& e : evals) {
    auto why = ev.why_no_cupti(e);
    e.cupti = why.empty() ? choice : no_cupti_choice(configured, why);
  }
  return choice;
}

}  // namespace magpie::kernel
