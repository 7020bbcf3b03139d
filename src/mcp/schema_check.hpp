#pragma once
// The subset of JSON Schema (2020-12) our tool schemas use: type (one or a
// list), properties, required, additionalProperties, enum, const, minimum,
// maximum, minLength, minItems, maxItems, items, anyOf. Debian 12 packages no
// C++ validator for nlohmann::json, and this subset is all the tools need.
// Keywords outside it are ignored (as annotations), never rejected.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace magpie::mcp {

struct SchemaViolation {
  std::string path;              // "arguments.kernel_paths[1]", "" for the root
  std::string message;           // "expected string, got number"
  std::string describe() const;  // "kernel_paths[1]: expected string, got number"
};

// The first violation, or nullopt when `value` conforms. `root` names the
// value in paths ("" leaves paths relative: "top_k", "configs[0].model").
std::optional<SchemaViolation> check_schema(const nlohmann::json& schema,
                                            const nlohmann::json& value,
                                            const std::string& root = "");

}  // namespace magpie::mcp
