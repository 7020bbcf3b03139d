#pragma once
// The arguments of one recorded CPU op, typed: what Kineto's "Input Dims",
// "Input type", "Input Strides" and "Concrete Inputs" say about each
// positional argument (record_shapes=True writes one entry per argument of
// the op's schema, keyword-only ones included, in schema order).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::replay {

enum class ArgumentKind : uint8_t {
  kTensor,  // a tensor: shape, strides, dtype
  kNumber,  // a Python number wrapped as a tensor ("double"/"long int"/"bool" with no dims): value
            // not recorded
  kScalar,  // "Scalar" with a concrete value (int, float, bool)
  kScalarList,  // "ScalarList" with a concrete value ("[16384, 4096]")
  kTensorList,  // "TensorList": one tensor per element
  kNone,        // "" (None, or a type the profiler does not record: Device, str, ...)
};
const char* to_string(ArgumentKind kind);

struct TensorSpec {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: contiguous (trace without "Input Strides")
  std::string kineto_dtype;      // as recorded: "c10::BFloat16", "float", "long int"
  std::string torch_dtype;       // "bfloat16", "float32", "int64"; empty when unknown
  bool is_floating() const;
  bool is_integer() const;  // integer types, bool excluded
  int64_t numel() const;
};

struct ScalarValue {
  enum class Type : uint8_t { kInt, kFloat, kBool } type = Type::kInt;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string text;  // as recorded ("0.088388347648318447"), so the module writes it exactly
};

struct OpArgument {
  ArgumentKind kind = ArgumentKind::kNone;
  TensorSpec tensor;                // kTensor, kNumber (its dtype)
  std::vector<TensorSpec> tensors;  // kTensorList
  ScalarValue scalar;               // kScalar
  std::vector<ScalarValue> list;    // kScalarList
};

// The raw text of the four args, as the trace holds them (src/trace keeps
// them as text; this is the one place they become typed).
struct RecordedArgs {
  std::string_view input_dims, input_type, input_strides, concrete_inputs;
};

struct ParsedArgs {
  std::vector<OpArgument> arguments;
  std::string error;  // non-empty: why the args could not be read (replay lists the op with it)
};

// Never throws: malformed or inconsistent text comes back as `error`.
ParsedArgs parse_op_arguments(const RecordedArgs& recorded);

// Kineto's dtype string → torch's name ("c10::BFloat16" → "bfloat16"); empty when unknown.
std::string torch_dtype_name(std::string_view kineto_dtype);

// "[[16384, 4096], [4096, 4096]]" → shapes of the tensor arguments, for
// --op NAME:SHAPES and for display. nullopt on malformed text.
std::optional<std::vector<std::vector<int64_t>>> parse_shape_filter(std::string_view text);

// Whether the op's tensor-argument shapes start with `filter` (one shape per
// tensor or TensorList argument, in order; a TensorList matches its first element).
bool shapes_match(const std::vector<OpArgument>& arguments,
                  const std::vector<std::vector<int64_t>>& filter);

// "bfloat16[16384, 4096], bfloat16[4096, 4096] strides [1, 4096]": short text for notes.
std::string describe_arguments(const std::vector<OpArgument>& arguments);

}  // namespace magpie::replay
