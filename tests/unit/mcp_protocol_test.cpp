// MCP protocol: JSON-RPC classification and a session's
// dispatch (lifecycle, tools/list, tools/call, errors, progress, cancellation).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "mcp/http_transport.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/protocol.hpp"
#include "mcp/stdio_transport.hpp"
#include "mcp/tool_registry.hpp"

namespace magpie::mcp {
namespace {

using nlohmann::json;

TEST(McpJsonRpc, ClassifiesMessages) {
  auto req = parse_message(R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  ASSERT_TRUE(req.message);
  EXPECT_EQ(req.message->kind, MessageKind::kRequest);
  EXPECT_EQ(req.message->id, 7);
  auto note = parse_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(note.message);
  EXPECT_EQ(note.message->kind, MessageKind::kNotification);
  auto resp = parse_message(R"({"jsonrpc":"2.0","id":"a","result":{}})");
  ASSERT_TRUE(resp.message);
  EXPECT_EQ(resp.message->kind, MessageKind::kResponse);
}

TEST(McpJsonRpc, ErrorsForBadMessages) {
  auto bad_json = parse_message("{\"jsonrpc\":\"2.0\",");
  ASSERT_TRUE(bad_json.error);
  EXPECT_EQ(bad_json.error->code, kParseError);
  EXPECT_TRUE(bad_json.error->id.is_null());

  auto no_version = parse_message(R"({"id":1,"method":"ping"})");
  ASSERT_TRUE(no_version.error);
  EXPECT_EQ(no_version.error->code, kInvalidRequest);
  EXPECT_EQ(no_version.error->id, 1);

  EXPECT_EQ(parse_message(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])").error->code,
            kInvalidRequest);
  EXPECT_EQ(parse_message(R"({"jsonrpc":"2.0","id":1,"method":5})").error->code, kInvalidRequest);
  EXPECT_EQ(parse_message(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})").error->code,
            kInvalidRequest);
  EXPECT_EQ(parse_message(R"({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})").error->code,
            kInvalidRequest);
  EXPECT_EQ(parse_message("42").error->code, kInvalidRequest);
}

// Collects what a session sends.
class Recorder : public Outbox {
 public:
  void send(const json& m) override {
    std::lock_guard lock(mutex_);
    messages.push_back(m);
  }
  void finish() override { finished = true; }
  std::vector<json> snapshot() {
    std::lock_guard lock(mutex_);
    return messages;
  }
  std::vector<json> messages;
  std::atomic<bool> finished{false};

 private:
  std::mutex mutex_;
};

ToolRegistry test_tools(std::atomic<bool>* release) {
  ToolRegistry r;
  Tool echo;
  echo.name = "echo";
  echo.description = "echoes";
  echo.input_schema = json::parse(
      R"({"type":"object","required":["text"],"additionalProperties":false,
          "properties":{"text":{"type":"string"},"times":{"type":"integer","minimum":1}}})");
  echo.output_schema = json::parse(
      R"({"type":"object","required":["text"],"properties":{"text":{"type":"string"}}})");
  echo.handler = [](const ToolCall& c) {
    std::string text = c.arguments["text"];
    if (text == "missing") throw Error(ErrorKind::kNotFound, "no such file: missing.json");
    if (text == "bad-output") return ToolOutput{json{{"text", 5}}, {}};
    return ToolOutput{json{{"text", text}}, "said " + text};
  };
  r.add(echo);
  Tool slow;
  slow.name = "slow";
  slow.description = "waits for release or cancel";
  slow.long_running = true;
  slow.input_schema = json::parse(R"({"type":"object"})");
  slow.output_schema = json::parse(R"({"type":"object"})");
  slow.handler = [release](const ToolCall& c) {
    c.progress({1, 2, "half"});
    while (!release->load() && !c.cancelled())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    c.progress({2, 2, "done"});
    return ToolOutput{json{{"cancelled", c.cancelled()}}, {}};
  };
  r.add(slow);
  return r;
}

struct Fixture {
  std::atomic<bool> release{false};
  ToolRegistry tools = test_tools(&release);
  JobRunner jobs{1};
  Session session{tools, jobs, ServerOptions{}};

  json call(const std::string& text) {
    auto r = std::make_shared<Recorder>();
    session.handle_text(text, r);
    EXPECT_TRUE(r->finished);
    EXPECT_EQ(r->messages.size(), 1u) << text;
    return r->messages.empty() ? json() : r->messages.back();
  }
  void initialize(const std::string& version = "2025-06-18") {
    json r = call(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" +
                  version + R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    ASSERT_TRUE(r.contains("result")) << r;
  }
};

TEST(McpSession, InitializeNegotiatesTheVersion) {
  Fixture f;
  json r = f.call(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})");
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "magpie");
  EXPECT_EQ(r["result"]["capabilities"]["tools"]["listChanged"], false);
  r = f.call(
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05"}})");
  EXPECT_EQ(r["result"]["protocolVersion"], supported_protocol_versions().front());
  r = f.call(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})");
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
}

TEST(McpSession, RequestsBeforeInitializeAreRefused) {
  Fixture f;
  EXPECT_TRUE(f.call(R"({"jsonrpc":"2.0","id":1,"method":"ping"})").contains("result"));
  EXPECT_EQ(f.call(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})")["error"]["code"],
            kInvalidRequest);
}

TEST(McpSession, ListsAndCallsTools) {
  Fixture f;
  f.initialize();
  json list = f.call(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  ASSERT_EQ(list["result"]["tools"].size(), 2u);
  EXPECT_EQ(list["result"]["tools"][0]["name"], "echo");
  EXPECT_TRUE(list["result"]["tools"][0].contains("outputSchema"));

  json r = f.call(
      R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})");
  EXPECT_EQ(r["id"], "c1");
  EXPECT_EQ(r["result"]["isError"], false);
  EXPECT_EQ(r["result"]["structuredContent"]["text"], "hi");
  EXPECT_EQ(r["result"]["content"][0]["text"], "said hi");
}

TEST(McpSession, ErrorCodes) {
  Fixture f;
  f.initialize();
  EXPECT_EQ(f.call("not json")["error"]["code"], kParseError);
  EXPECT_EQ(f.call(R"({"jsonrpc":"2.0","id":1,"method":"server/discover"})")["error"]["code"],
            kMethodNotFound);
  json unknown = f.call(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}})");
  EXPECT_EQ(unknown["error"]["code"], kInvalidParams);
  json missing = f.call(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}})");
  EXPECT_EQ(missing["error"]["code"], kInvalidParams);
  EXPECT_NE(missing["error"]["message"].get<std::string>().find("text"), std::string::npos);
  json wrong = f.call(
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","times":"2"}}})");
  EXPECT_EQ(wrong["error"]["code"], kInvalidParams);
  EXPECT_NE(wrong["error"]["message"].get<std::string>().find("times"), std::string::npos);
  // The session still works afterwards.
  EXPECT_TRUE(f.call(R"({"jsonrpc":"2.0","id":5,"method":"ping"})").contains("result"));
}

TEST(McpSession, HandlerFailuresAreToolErrors) {
  Fixture f;
  f.initialize();
  json r = f.call(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"missing"}}})");
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("missing.json"),
            std::string::npos);
  r = f.call(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"bad-output"}}})");
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("outputSchema"),
            std::string::npos);
}

TEST(McpSession, LongCallsReportProgressAndAnswerLater) {
  Fixture f;
  f.initialize();
  auto r = std::make_shared<Recorder>();
  f.session.handle_text(
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p"}}})",
      r);
  while (r->snapshot().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  json first = r->snapshot().front();
  EXPECT_EQ(first["method"], "notifications/progress");
  EXPECT_EQ(first["params"]["progressToken"], "p");
  EXPECT_EQ(first["params"]["total"], 2);
  EXPECT_EQ(first["params"]["message"], "half");
  EXPECT_FALSE(r->finished);
  f.release = true;
  ASSERT_TRUE(f.session.wait_idle(std::chrono::seconds(10)));
  auto all = r->snapshot();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.back()["id"], 9);
  EXPECT_EQ(all.back()["result"]["structuredContent"]["cancelled"], false);
  EXPECT_TRUE(r->finished);
}

TEST(McpSession, CancelledCallsGetNoResponse) {
  Fixture f;
  f.initialize();
  auto r = std::make_shared<Recorder>();
  f.session.handle_text(
      R"({"jsonrpc":"2.0","id":"job","method":"tools/call","params":{"name":"slow","arguments":{}}})",
      r);
  while (f.session.in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  f.call(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");  // the session keeps answering
  auto note = std::make_shared<Recorder>();
  f.session.handle_text(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"job","reason":"test"}})",
      note);
  EXPECT_TRUE(note->messages.empty());
  ASSERT_TRUE(f.session.wait_idle(std::chrono::seconds(10)));
  EXPECT_TRUE(r->finished);
  EXPECT_TRUE(r->snapshot().empty());  // no progress asked for, and no response after cancel
}

TEST(McpStdio, ServesLinesUntilEof) {
  std::atomic<bool> release{true};
  ToolRegistry tools = test_tools(&release);
  JobRunner jobs{1};
  Session session{tools, jobs, ServerOptions{}};
  std::istringstream in(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n\n"
      "{oops\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}})"
      "\n");
  std::ostringstream out;
  EXPECT_EQ(serve_stdio(in, out, session), 0);
  jobs.shutdown();
  std::istringstream lines(out.str());
  std::vector<json> got;
  for (std::string line; std::getline(lines, line);) got.push_back(json::parse(line));
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0]["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(got[1]["error"]["code"], kParseError);
  EXPECT_TRUE(got[1]["id"].is_null());
}

TEST(McpHttp, LoopbackRules) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  EXPECT_TRUE(is_loopback_origin("http://localhost:6274"));
  EXPECT_TRUE(is_loopback_origin("http://127.0.0.1"));
  EXPECT_TRUE(is_loopback_origin("http://[::1]:3000"));
  EXPECT_FALSE(is_loopback_origin("https://evil.example"));
  EXPECT_FALSE(is_loopback_origin("http://localhost.evil.example"));
  EXPECT_FALSE(is_loopback_origin("null"));
}

TEST(McpHttp, NonLoopbackBindNeedsAToken) {
  std::atomic<bool> release{true};
  ToolRegistry tools = test_tools(&release);
  JobRunner jobs{1};
  HttpOptions h;
  h.host = "0.0.0.0";
  h.port = 0;
  EXPECT_THROW(HttpServer(tools, jobs, ServerOptions{}, h), Error);
}

}  // namespace
}  // namespace magpie::mcp
