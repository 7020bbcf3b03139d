#pragma once
// Which aten ops `magpie replay` rebuilds, and how: one descriptor per op
// (family, how the module calls it, the input range that keeps it finite,
// which integer arguments index which dimension, whether it runs on CPU).
// Adding an op is one row in op_table.cpp; docs/REPLAY.md has the table.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace magpie::replay {

enum class OpFamily : uint8_t {
  kGemm,
  kAttention,
  kNorm,
  kSoftmax,
  kElementwise,
  kReduction,
  kEmbedding,
  kDataMovement
};
const char* to_string(OpFamily family);

enum class CallStyle : uint8_t {
  kAten,        // torch.ops.aten.<name> with the recorded arguments (overload chosen by schema)
  kOutOfPlace,  // in-place op replayed as its out-of-place twin (the harness rejects mutated
                // inputs)
  kCopyInto,    // copy_(dst, src): src copied into a fresh tensor of dst's layout
  kToCopy,      // aten::to(dtype): replayed as _to_copy(dtype=...), what it runs underneath
};

enum class InputDomain : uint8_t {
  kNormal,    // floats ~ N(0, 1)
  kPositive,  // floats ~ U(0.5, 1.5): log, sqrt, rsqrt, pow, div stay finite
};

// Integer tensor argument `index_arg` holds indices into dimension `dim` of
// argument `source_arg`; `dim` comes from Scalar argument `dim_arg` when it is
// ≥ 0. `per_element`: a TensorList whose element j indexes dimension j.
struct IndexBound {
  int index_arg = 0;
  int source_arg = 0;
  int dim_arg = -1;
  int dim = 0;
  bool per_element = false;
};

struct OpDescriptor {
  std::string_view name;  // without "aten::"
  OpFamily family = OpFamily::kElementwise;
  CallStyle style = CallStyle::kAten;
  InputDomain domain = InputDomain::kNormal;
  bool runs_on_cpu = true;
  std::string_view cpu_reason;  // why not, when !runs_on_cpu
  std::span<const IndexBound> bounds;
  bool first_output_only =
      false;  // tuple result: compare the primary output only (auxiliaries differ by backend)
};

// The descriptor of a replayable op ("aten::mm" or "mm"), else null.
const OpDescriptor* find_op(std::string_view op_name);
// Why an op that is not in the table cannot be replayed (a view, an allocation,
// a random op, a custom op, ...).
std::string not_replayable_reason(std::string_view op_name);
// Every descriptor, for docs and tests.
std::span<const OpDescriptor> all_ops();

}  // namespace magpie::replay
