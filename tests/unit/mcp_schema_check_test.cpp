// The JSON Schema subset the MCP tools' input and output schemas use.
#include <gtest/gtest.h>

#include "mcp/schema_check.hpp"

namespace magpie::mcp {
namespace {

using nlohmann::json;

TEST(McpSchema, ChecksTheSubsetWeUse) {
  json schema = json::parse(R"({
    "type":"object","additionalProperties":false,"required":["paths"],
    "properties":{
      "paths":{"type":"array","minItems":2,"items":{"type":"string","minLength":1}},
      "top_k":{"type":"integer","minimum":1},
      "kind":{"type":"string","enum":["hip","cuda"]},
      "ratio":{"type":["number","null"],"maximum":1}
    }})");
  EXPECT_FALSE(check_schema(schema, json::parse(R"({"paths":["a","b"],"top_k":3})")));
  EXPECT_FALSE(check_schema(schema, json::parse(R"({"paths":["a","b"],"top_k":3.0})")));

  auto missing = check_schema(schema, json::parse(R"({"top_k":3})"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->path, "paths");
  EXPECT_NE(missing->message.find("required"), std::string::npos);

  auto item = check_schema(schema, json::parse(R"({"paths":["a",5]})"));
  ASSERT_TRUE(item);
  EXPECT_EQ(item->describe(), "paths[1]: expected string, got integer");

  EXPECT_EQ(check_schema(schema, json::parse(R"({"paths":["a"]})"))->path, "paths");
  EXPECT_EQ(check_schema(schema, json::parse(R"({"paths":["a",""]})"))->path, "paths[1]");
  EXPECT_EQ(check_schema(schema, json::parse(R"({"paths":["a","b"],"top_k":0})"))->path, "top_k");
  EXPECT_EQ(check_schema(schema, json::parse(R"({"paths":["a","b"],"top_k":"3"})"))->path, "top_k");
  EXPECT_EQ(check_schema(schema, json::parse(R"({"paths":["a","b"],"kind":"x"})"))->path, "kind");
  EXPECT_EQ(check_schema(schema, json::parse(R"({"paths":["a","b"],"ratio":2})"))->path, "ratio");
  EXPECT_FALSE(check_schema(schema, json::parse(R"({"paths":["a","b"],"ratio":null})")));
  auto extra = check_schema(schema, json::parse(R"({"paths":["a","b"],"topk":1})"));
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->path, "topk");
  EXPECT_NE(extra->message.find("top_k"), std::string::npos);  // lists the known names
}

}  // namespace
}  // namespace magpie::mcp
