#pragma once
// MCP over Streamable HTTP (spec 2025-06-18 / 2025-11-25), on Boost.Beast:
//   POST /mcp    one JSON-RPC message; a request gets application/json, or
//                text/event-stream when it asked for progress (progress
//                notifications, then the result); a notification gets 202.
//   DELETE /mcp  ends the session named by Mcp-Session-Id.
//   GET /mcp     405: the server opens no stream of its own.
//   GET /health  {"status":"ok"}
// Mcp-Session-Id is issued by initialize and required afterwards (400 when
// missing, 404 when unknown); MCP-Protocol-Version, when sent, must be one we
// speak (400). Origin headers other than loopback get 403. A token, when set,
// is required as "Authorization: Bearer <token>" on /mcp (401).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mcp/protocol.hpp"

namespace magpie::mcp {

struct HttpOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8765;  // 0: any free port (see HttpServer::port())
  std::string token;     // required when host is not a loopback address
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// "127.0.0.1", "::1", "localhost" → true; "0.0.0.0", "10.1.2.3", names → false.
bool is_loopback_host(const std::string& host);
// Origin header value → whether it names a loopback host ("http://localhost:6274").
bool is_loopback_origin(const std::string& origin);

class HttpServer {
 public:
  // Binds now. Throws magpie::Error(kUsage) for a non-loopback host without a
  // token, and when the address cannot be bound.
  HttpServer(const ToolRegistry& tools, JobRunner& jobs, ServerOptions server, HttpOptions http);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  // Serves until stop(); then cancels every session's in-flight calls and waits for them.
  void run();
  void stop();  // from any thread

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace magpie::mcp
