#pragma once
// The performance stage across implementations: interleaved rounds with a
// rotating order (drift hits all alike, no implementation always runs first),
// preceded by cupti_kind auto's probe rounds when the CUPTI library is in use.
#include <functional>
#include <string>
#include <vector>

#include "kernel/cupti_choice.hpp"
#include "kernel/evaluation.hpp"
#include "kernel/evaluator.hpp"

namespace magpie::kernel {

// Runs the probes (auto only), then performance.rounds rounds of every
// implementation with the one kind chosen; sets each Evaluation::cupti and
// returns the choice (kind "" when no implementation runs under CUPTI).
// `on_measure(round, rounds, step, steps, id)` is called before each measurement (progress).
using RoundProgress = std::function<void(int round, int rounds, size_t step, size_t steps, const std::string& id)>;
CuptiChoice run_performance_rounds(const Evaluator& ev, std::vector<Evaluation>& evals,
                                   const RoundProgress& on_measure = {});

}  // namespace magpie::kernel
