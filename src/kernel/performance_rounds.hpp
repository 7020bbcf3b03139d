#pragma once
// The performance stage across implementations: interleaved rounds with a
// rotating order (drift hits all alike, no implementation always runs first).
// With cupti_kind auto, the first round runs with concurrent and decides the
// kind (no separate probe pass): kept as a measured round when concurrent is
// chosen, else counted as the probe and followed by rounds with serial.
// Without an exact round count, a compare runs min_rounds and then more until
// every candidate's verdict is settled (its CI clear of the SAME band, or
// inside it), at most max_rounds; a settled candidate is not measured again.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernel/cupti_choice.hpp"
#include "kernel/evaluation.hpp"
#include "kernel/evaluator.hpp"
#include "kernel/verdict.hpp"

namespace magpie::kernel {

// `on_measure(round, rounds, step, steps, id)` is called before each measurement
// (progress): `rounds` is the number planned so far (it grows while verdicts are
// open); `step` counts the measurements made, `steps` what the current plan holds
// in all (it grows with the plan), so that step/steps times the time spent is an ETA.
using RoundProgress = std::function<void(int round, int rounds, size_t step, size_t steps, const std::string& id)>;
// A candidate whose verdict is settled (or that can no longer get one: rejected,
// every round failed), after `rounds` measured rounds; estimate empty when not measured.
using VerdictSettled =
    std::function<void(const Evaluation& e, const std::optional<SpeedupEstimate>& estimate, int rounds)>;

struct RoundsPlan {
  std::optional<size_t> baseline;  // compare's baseline: adaptive rounds need one
  VerdictSettings verdict;         // the settings the final verdicts use
};

// Sets each Evaluation::cupti and returns the choice (kind "" when no
// implementation runs under CUPTI).
CuptiChoice run_performance_rounds(const Evaluator& ev, std::vector<Evaluation>& evals,
                                   const RoundProgress& on_measure = {}, const RoundsPlan& plan = {},
                                   const VerdictSettled& on_settled = {});

// The verdict `cand` has against `base` from the rounds so far, when it is
// settled (FASTER, SLOWER or SAME); nullopt while AMBIGUOUS.
std::optional<SpeedupEstimate> settled_verdict(const Evaluation& base, const Evaluation& cand,
                                               const VerdictSettings& settings);

}  // namespace magpie::kernel
