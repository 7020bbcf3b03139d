#pragma once
// A RunRecord as JSON (the CLI's --json and the MCP server's answers).
#include <nlohmann/json.hpp>

#include "store/results_store.hpp"

namespace magpie::store {

nlohmann::json to_json(const RunRecord& record);

}  // namespace magpie::store
