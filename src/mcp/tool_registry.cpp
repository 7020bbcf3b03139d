#include "mcp/tool_registry.hpp"

#include <stdexcept>

namespace magpie::mcp {

using nlohmann::json;

void ToolRegistry::add(Tool tool) {
  if (index_.count(tool.name)) throw std::invalid_argument("tool registered twice: " + tool.name);
  for (const json* schema : {&tool.input_schema, &tool.output_schema}) {
    if (!schema->is_object() || schema->value("type", "") != "object")
      throw std::invalid_argument("tool " + tool.name +
                                  ": schemas must be {\"type\":\"object\",...}");
  }
  if (!tool.handler) throw std::invalid_argument("tool " + tool.name + " has no handler");
  index_[tool.name] = tools_.size();
  tools_.push_back(std::move(tool));
}

const Tool* ToolRegistry::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tools_[it->second];
}

json ToolRegistry::list_json() const {
  json list = json::array();
  for (const auto& t : tools_) {
    json entry = {{"name", t.name},
                  {"description", t.description},
                  {"inputSchema", t.input_schema},
                  {"outputSchema", t.output_schema}};
    if (!t.title.empty()) entry["title"] = t.title;
    if (!t.annotations.empty()) entry["annotations"] = t.annotations;
    list.push_back(std::move(entry));
  }
  return {{"tools", std::move(list)}};
}

json tool_result(const ToolOutput& output) {
  std::string text = output.text.empty() ? output.structured.dump(2) : output.text;
  return {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})},
          {"structuredContent", output.structured},
          {"isError", false}};
}

json tool_error_result(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

}  // namespace magpie::mcp
