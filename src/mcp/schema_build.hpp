#pragma once
// Terse builders for the JSON Schemas in tools.cpp, so each tool's schema
// reads as a list of parameters.
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace magpie::mcp::schema {

using nlohmann::json;

inline json string(const std::string& description) {
  return {{"type", "string"}, {"description", description}};
}
inline json path(const std::string& description) {
  return {{"type", "string"}, {"minLength", 1}, {"description", description}};
}
inline json one_of(const std::string& description, std::vector<std::string> options) {
  return {{"type", "string"}, {"enum", std::move(options)}, {"description", description}};
}
inline json integer(const std::string& description, std::optional<double> minimum = std::nullopt) {
  json s = {{"type", "integer"}, {"description", description}};
  if (minimum) s["minimum"] = *minimum;
  return s;
}
inline json number(const std::string& description, std::optional<double> minimum = std::nullopt) {
  json s = {{"type", "number"}, {"description", description}};
  if (minimum) s["minimum"] = *minimum;
  return s;
}
inline json boolean(const std::string& description) {
  return {{"type", "boolean"}, {"description", description}};
}
inline json array(json items, const std::string& description, size_t min_items = 0) {
  json s = {{"type", "array"}, {"items", std::move(items)}, {"description", description}};
  if (min_items) s["minItems"] = min_items;
  return s;
}
inline json any_object(const std::string& description) {
  return {{"type", "object"}, {"description", description}};
}
inline json with_default(json s, json value) {
  s["default"] = std::move(value);
  return s;
}

// An object schema. Input schemas are closed (a misspelt argument is an
// error, not silently ignored); output schemas stay open so a report can
// grow a field without breaking clients.
inline json object(std::initializer_list<std::pair<const char*, json>> properties,
                   std::vector<std::string> required = {}, bool closed = false) {
  json props = json::object();
  for (const auto& [k, v] : properties) props[k] = v;
  json s = {{"type", "object"}, {"properties", std::move(props)}};
  if (!required.empty()) s["required"] = std::move(required);
  if (closed) s["additionalProperties"] = false;
  return s;
}
inline json input(std::initializer_list<std::pair<const char*, json>> properties,
                  std::vector<std::string> required = {}) {
  return object(properties, std::move(required), /*closed=*/true);
}

}  // namespace magpie::mcp::schema
