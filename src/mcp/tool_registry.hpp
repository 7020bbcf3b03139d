#pragma once
// The tools a server offers: name, description, input and output schemas and
// the handler that maps arguments onto a library call. A handler returns
// structured JSON (validated against outputSchema) and a readable rendering.
#include <atomic>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace magpie::mcp {

struct ToolProgress {
  double progress = 0;
  std::optional<double> total;
  std::string message;
};

// What a handler gets besides its arguments.
struct ToolCall {
  nlohmann::json arguments = nlohmann::json::object();  // already checked against inputSchema
  // Reports progress; a no-op when the client asked for none.
  std::function<void(const ToolProgress&)> progress = [](const ToolProgress&) {};
  // Set when the client cancels; long handlers pass it down to the job.
  const std::atomic<bool>* cancel = nullptr;
  std::string command_line;  // "mcp tools/call gap_analysis {...}", for the results store
  bool cancelled() const { return cancel && cancel->load(); }
};

struct ToolOutput {
  nlohmann::json structured = nlohmann::json::object();
  std::string text;  // empty: the structured JSON, indented, is the text
};

using ToolHandler = std::function<ToolOutput(const ToolCall&)>;

struct Tool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;   // a JSON Schema object ({"type":"object",...})
  nlohmann::json output_schema;  // likewise; structuredContent must conform
  bool long_running = false;     // true: runs on the job runner (queued, cancellable)
  // MCP tool annotations (hints for clients): readOnlyHint, destructiveHint,
  // idempotentHint, openWorldHint. Empty = none sent.
  nlohmann::json annotations = nlohmann::json::object();
  ToolHandler handler;
};

class ToolRegistry {
 public:
  // Throws std::invalid_argument on a duplicate name or a schema that is not an object schema.
  void add(Tool tool);
  const Tool* find(const std::string& name) const;
  const std::vector<Tool>& tools() const { return tools_; }
  // The tools/list result: {"tools":[{name,title,description,inputSchema,outputSchema}]}.
  nlohmann::json list_json() const;

 private:
  std::vector<Tool> tools_;
  std::map<std::string, size_t> index_;
};

// The tools/call result for a handler's output, and for a failed call
// (isError: true, the text says what went wrong and what to fix).
nlohmann::json tool_result(const ToolOutput& output);
nlohmann::json tool_error_result(const std::string& text);

}  // namespace magpie::mcp
