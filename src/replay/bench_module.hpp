#pragma once
// The standalone bench_target module of one replayed op: get_inputs() builds
// tensors of the recorded shapes, strides and dtypes from seeded random data
// (torch's global generator, which the harness seeds per seed), and replay()
// calls the op. The module needs only torch.
#include <optional>
#include <string>
#include <string_view>

#include "replay/replay.hpp"

namespace magpie::replay {

// Fills what the module needs beyond the recorded args (TensorList dtypes,
// index bounds, CPU support, notes) and returns why the op cannot be
// replayed, if it cannot: an unknown dtype, no floating-point input for the
// harness's correctness gate, an aten::to that only moves devices, ...
std::optional<std::string> prepare_target(ReplayTarget& target);

// Python text of baseline.py for a prepared target.
std::string bench_module_text(const ReplayTarget& target, std::string_view trace_name);

// Python name of a Kineto ScalarType code (6 → "float32", 15 → "bfloat16"); empty if unknown.
std::string scalar_type_name(int64_t code);

}  // namespace magpie::replay
