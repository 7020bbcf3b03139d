#include "mcp/schema_check.hpp"

#include <cmath>
#include <cstdint>

namespace magpie::mcp {

using nlohmann::json;

std::string SchemaViolation::describe() const {
  return path.empty() ? message : path + ": " + message;
}

namespace {

const char* json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "unknown";
  }
}

bool has_type(const json& v, const std::string& type) {
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    // JSON Schema counts 3.0 as an integer.
    return v.is_number_float() && std::isfinite(v.get<double>()) &&
           v.get<double>() == std::floor(v.get<double>());
  }
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return true;  // unknown type names are not ours to reject
}

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

std::string short_value(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::optional<SchemaViolation> check(const json& schema, const json& v, const std::string& path) {
  if (!schema.is_object()) return std::nullopt;
  auto fail = [&](std::string message) {
    return std::optional<SchemaViolation>(SchemaViolation{path, std::move(message)});
  };

  if (auto it = schema.find("type"); it != schema.end()) {
    bool ok = false;
    std::string wanted;
    if (it->is_string()) {
      ok = has_type(v, it->get<std::string>());
      wanted = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& t : *it) {
        if (!t.is_string()) continue;
        ok = ok || has_type(v, t.get<std::string>());
        wanted += (wanted.empty() ? "" : " or ") + t.get<std::string>();
      }
    } else {
      ok = true;
    }
    if (!ok) return fail("expected " + wanted + ", got " + json_type_name(v));
  }
  if (auto it = schema.find("const"); it != schema.end() && v != *it)
    return fail("must be " + it->dump());
  if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
    bool found = false;
    for (const auto& option : *it) found = found || option == v;
    if (!found) {
      std::string options;
      for (const auto& option : *it) options += (options.empty() ? "" : ", ") + option.dump();
      return fail("got " + short_value(v) + "; must be one of " + options);
    }
  }
  if (v.is_number()) {
    double x = v.get<double>();
    if (auto it = schema.find("minimum");
        it != schema.end() && it->is_number() && x < it->get<double>())
      return fail("must be >= " + it->dump() + ", got " + v.dump());
    if (auto it = schema.find("maximum");
        it != schema.end() && it->is_number() && x > it->get<double>())
      return fail("must be <= " + it->dump() + ", got " + v.dump());
  }
  if (v.is_string()) {
    if (auto it = schema.find("minLength");
        it != schema.end() && it->is_number_integer() &&
        static_cast<int64_t>(v.get_ref<const std::string&>().size()) < it->get<int64_t>())
      return fail(it->get<int64_t>() == 1 ? std::string("must not be empty")
                                          : "must have at least " + it->dump() + " characters");
  }
  if (v.is_array()) {
    if (auto it = schema.find("minItems"); it != schema.end() && it->is_number_integer() &&
                                           static_cast<int64_t>(v.size()) < it->get<int64_t>())
      return fail("needs at least " + it->dump() + " items, got " + std::to_string(v.size()));
    if (auto it = schema.find("maxItems"); it != schema.end() && it->is_number_integer() &&
                                           static_cast<int64_t>(v.size()) > it->get<int64_t>())
      return fail("takes at most " + it->dump() + " items, got " + std::to_string(v.size()));
    if (auto it = schema.find("items"); it != schema.end() && it->is_object()) {
      for (size_t i = 0; i < v.size(); ++i)
        if (auto bad = check(*it, v[i], path + "[" + std::to_string(i) + "]")) return bad;
    }
  }
  if (v.is_object()) {
    const json* props = nullptr;
    if (auto it = schema.find("properties"); it != schema.end() && it->is_object()) props = &*it;
    if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
      for (const auto& key : *it) {
        if (key.is_string() && !v.contains(key.get<std::string>()))
          return std::optional<SchemaViolation>(
              SchemaViolation{join_path(path, key.get<std::string>()), "required but missing"});
      }
    }
    for (const auto& [key, value] : v.items()) {
      if (props && props->contains(key)) {
        if (auto bad = check((*props)[key], value, join_path(path, key))) return bad;
        continue;
      }
      auto extra = schema.find("additionalProperties");
      if (extra == schema.end()) continue;
      if (extra->is_boolean() && !extra->get<bool>()) {
        std::string known;
        if (props)
          for (const auto& [name, _] : props->items()) known += (known.empty() ? "" : ", ") + name;
        return std::optional<SchemaViolation>(SchemaViolation{
            join_path(path, key), "unknown property" + (known.empty() ? "" : "; known: " + known)});
      }
      if (extra->is_object())
        if (auto bad = check(*extra, value, join_path(path, key))) return bad;
    }
  }
  if (auto it = schema.find("anyOf"); it != schema.end() && it->is_array()) {
    std::optional<SchemaViolation> first;
    for (const auto& option : *it) {
      auto bad = check(option, v, path);
      if (!bad) return std::nullopt;
      if (!first) first = bad;
    }
    if (first) return first;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SchemaViolation> check_schema(const json& schema, const json& value,
                                            const std::string& root) {
  return check(schema, value, root);
}

}  // namespace magpie::mcp
