#include "mcp/json_rpc.hpp"

namespace magpie::mcp {

using nlohmann::json;

ParseOutcome parse_message(std::string_view text) {
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return {std::nullopt,
            RpcError{kParseError, "Parse error: the message is not valid JSON", nullptr}};
  return classify_message(std::move(body));
}

namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

ParseOutcome classify_message(json body) {
  auto invalid = [](std::string why, json id = nullptr) {
    return ParseOutcome{std::nullopt,
                        RpcError{kInvalidRequest, "Invalid Request: " + why, std::move(id)}};
  };
  if (body.is_array()) return invalid("batches are not supported; send one message at a time");
  if (!body.is_object()) return invalid("a message is a JSON object");
  json id = body.contains("id") ? body["id"] : json(nullptr);
  if (!valid_id(id)) id = nullptr;
  if (body.value("jsonrpc", json()) != "2.0") return invalid("\"jsonrpc\" must be \"2.0\"", id);

  Message m;
  if (body.contains("method")) {
    if (!body["method"].is_string()) return invalid("\"method\" must be a string", id);
    m.method = body["method"].get<std::string>();
    if (body.contains("params")) {
      if (!body["params"].is_object()) return invalid("\"params\" must be an object", id);
      m.params = body["params"];
    }
    if (body.contains("id")) {
      if (!valid_id(body["id"])) return invalid("\"id\" must be a string or an integer");
      m.kind = MessageKind::kRequest;
      m.id = body["id"];
    } else {
      m.kind = MessageKind::kNotification;
    }
  } else if (body.contains("result") || body.contains("error")) {
    m.kind = MessageKind::kResponse;
    m.id = id;
  } else {
    return invalid("neither a request (\"method\") nor a response (\"result\"/\"error\")", id);
  }
  m.body = std::move(body);
  return {std::move(m), std::nullopt};
}

json make_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error(const json& id, int code, const std::string& message, const json& data) {
  json err = {{"code", code}, {"message", message}};
  if (!data.is_null()) err["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(err)}};
}

json make_error(const RpcError& e) { return make_error(e.id, e.code, e.message); }

json make_notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::string id_key(const json& id) { return id.dump(); }

}  // namespace magpie::mcp
