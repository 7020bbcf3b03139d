#pragma once
// JSON-RPC 2.0 framing for MCP: classify one incoming message, build
// responses, errors and notifications. No batches (MCP 2025-06-18 dropped them).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace magpie::mcp {

// JSON-RPC error codes used by the server.
enum RpcCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

enum class MessageKind { kRequest, kNotification, kResponse };

struct Message {
  MessageKind kind = MessageKind::kRequest;
  nlohmann::json id;  // requests and responses; null for notifications
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // {} when absent
  nlohmann::json body;                               // the whole message
};

// The error reply for a message that could not be accepted.
struct RpcError {
  int code = kInternalError;
  std::string message;
  nlohmann::json id;  // null when the id could not be read
};

// Parses one message text; on failure returns the error to send back
// (-32700 for malformed JSON, -32600 for a JSON value that is not a message).
// std::variant would do, but two optionals keep call sites plain.
struct ParseOutcome {
  std::optional<Message> message;
  std::optional<RpcError> error;
};
ParseOutcome parse_message(std::string_view text);
ParseOutcome classify_message(nlohmann::json body);

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, int code, const std::string& message,
                          const nlohmann::json& data = nullptr);
nlohmann::json make_error(const RpcError& error);
nlohmann::json make_notification(const std::string& method, nlohmann::json params);

// A stable map key for a request id (string and number ids never collide).
std::string id_key(const nlohmann::json& id);

}  // namespace magpie::mcp
