#pragma once
// One MCP session: the lifecycle (initialize, version negotiation, ping), tool
// listing and tool calls, progress and cancellation. Transports feed it
// messages and give it an Outbox per request; everything else is here, so
// stdio and Streamable HTTP behave the same.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/job_runner.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/tool_registry.hpp"

namespace magpie::mcp {

// Protocol revisions we speak, newest first.
const std::vector<std::string>& supported_protocol_versions();
// The client's version when we support it, else our newest (the spec's rule).
std::string negotiate_protocol_version(const std::string& requested);

// Where one request's messages go: its progress notifications, then its
// response. stdio: stdout; HTTP: the body of the POST that carried it.
class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void send(const nlohmann::json& message) = 0;
  // The request is over: its response went through send(), or it was
  // cancelled and none will (the spec forbids answering a cancelled request).
  virtual void finish() {}
};

struct ServerOptions {
  std::string name = "magpie";
  std::string title = "Magpie";
  std::string version = "0.1.0";
  std::string instructions;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class Session {
 public:
  Session(const ToolRegistry& tools, JobRunner& jobs, ServerOptions options);
  ~Session();  // cancels what is in flight and waits for it
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // One message text: parse errors (-32700) and invalid messages (-32600) are
  // answered through `out`, then `out` is finished.
  void handle_text(std::string_view text, const std::shared_ptr<Outbox>& out);
  // One parsed message. A request is answered through `out`, now or later
  // from a worker; notifications and responses finish `out` at once.
  void handle(const Message& message, const std::shared_ptr<Outbox>& out);

  bool initialized() const;
  std::string protocol_version() const;  // "" before initialize
  size_t in_flight() const;
  // Sets every in-flight request's cancel flag (as notifications/cancelled would).
  void cancel_all(const std::string& reason);
  // Waits until nothing is in flight, at most `timeout`; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);

 private:
  struct InFlight {
    std::atomic<bool> cancel{false};
    std::string tool;
  };
  nlohmann::json dispatch(const Message& request);  // synchronous methods
  void call_tool(const Message& request, const std::shared_ptr<Outbox>& out);
  void on_cancelled(const nlohmann::json& params);
  void finish_request(const std::string& key);

  const ToolRegistry& tools_;
  JobRunner& jobs_;
  ServerOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::string protocol_version_;
  bool client_initialized_ = false;
  std::map<std::string, std::shared_ptr<InFlight>> in_flight_;
};

// The error for a request the session refused, as an exception the dispatcher turns into a reply.
struct RpcFailure {
  int code;
  std::string message;
};

}  // namespace magpie::mcp
