#pragma once
// Magpie's MCP tools (interface §7, plus tracelens): schemas and the mapping
// from arguments onto library calls. No logic lives here; a tool that needs
// more than mapping gets it from src/jobs, src/store, src/kernel, ...
#include "mcp/tool_registry.hpp"

namespace magpie::mcp {

ToolRegistry magpie_tools();

}  // namespace magpie::mcp
