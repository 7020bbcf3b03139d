#pragma once
// Op arguments that Kineto records on cpu_ops with record_shapes=True ("Input
// Dims", "Input type", "Concrete Inputs"), parsed once at ingest. A trace holds
// a few hundred distinct argument sets over hundreds of thousands of ops, so
// the ingest keeps each distinct set once (EventTable::op_details) with its
// parsed form beside its text; gap analysis, perf models and roofline read the
// parsed form instead of re-parsing the text per op.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::trace {

using OpDims = std::vector<std::vector<int64_t>>;

// "[[16, 1024, 4096], [4096, 4096], []]" → {{16,1024,4096},{4096,4096},{}}.
// A TensorList entry ("[[1, 64], [1, 64]]" inside the list) becomes an empty
// shape so indices stay aligned with "Input type". nullopt on malformed text.
std::optional<OpDims> parse_input_dims(std::string_view json);

// '["c10::BFloat16", "", "Scalar"]' → strings. Also parses "Concrete Inputs".
// Empty vector on malformed text.
std::vector<std::string> parse_input_types(std::string_view json);

// The parsed form of one argument set.
struct OpArgs {
  std::optional<OpDims> dims;          // nullopt: no Input Dims, or not a list of shapes
  std::vector<std::string> types;      // Input type; empty when absent or malformed
  std::vector<std::string> concrete;   // Concrete Inputs; empty when absent or malformed
};

struct EventTable;
class StringPool;

// Keeps one op_details entry per distinct argument text (rows that pointed at
// equal entries point at the one kept) and parses each entry's text into its
// `args`. Called once by the readers after the chunk tables are merged.
void index_op_arguments(EventTable& table, const StringPool& strings);

}  // namespace magpie::trace
