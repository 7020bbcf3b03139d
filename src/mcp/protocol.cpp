#include "mcp/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "core/error.hpp"
#include "mcp/schema_check.hpp"

namespace magpie::mcp {

using nlohmann::json;

const std::vector<std::string>& supported_protocol_versions() {
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18"};
  return versions;
}

std::string negotiate_protocol_version(const std::string& requested) {
  const auto& v = supported_protocol_versions();
  return std::find(v.begin(), v.end(), requested) != v.end() ? requested : v.front();
}

Session::Session(const ToolRegistry& tools, JobRunner& jobs, ServerOptions options)
    : tools_(tools), jobs_(jobs), options_(std::move(options)) {}

Session::~Session() {
  cancel_all("session closed");
  wait_idle(std::chrono::minutes(5));
}

bool Session::initialized() const {
  std::lock_guard lock(mutex_);
  return !protocol_version_.empty();
}

std::string Session::protocol_version() const {
  std::lock_guard lock(mutex_);
  return protocol_version_;
}

size_t Session::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_.size();
}

void Session::cancel_all(const std::string& reason) {
  std::lock_guard lock(mutex_);
  for (auto& [key, job] : in_flight_) {
    if (!job->cancel.exchange(true))
      options_.log("cancelling request " + key + " (" + job->tool + "): " + reason);
  }
}

bool Session::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [this] { return in_flight_.empty(); });
}

void Session::handle_text(std::string_view text, const std::shared_ptr<Outbox>& out) {
  ParseOutcome parsed = parse_message(text);
  if (parsed.error) {
    options_.log(parsed.error->message);
    out->send(make_error(*parsed.error));
    out->finish();
    return;
  }
  handle(*parsed.message, out);
}

void Session::handle(const Message& m, const std::shared_ptr<Outbox>& out) {
  if (m.kind == MessageKind::kResponse) {  // we send no requests; nothing to match
    out->finish();
    return;
  }
  if (m.kind == MessageKind::kNotification) {
    if (m.method == "notifications/initialized") {
      std::lock_guard lock(mutex_);
      client_initialized_ = true;
    } else if (m.method == "notifications/cancelled") {
      on_cancelled(m.params);
    }  // other notifications (progress, roots changed, ...) need nothing from us
    out->finish();
    return;
  }
  if (m.method == "tools/call") {
    if (!initialized()) {
      out->send(make_error(m.id, kInvalidRequest, "send initialize before tools/call"));
      out->finish();
      return;
    }
    call_tool(m, out);
    return;
  }
  json reply;
  try {
    reply = make_result(m.id, dispatch(m));
  } catch (const RpcFailure& f) {
    options_.log(m.method + ": " + f.message);
    reply = make_error(m.id, f.code, f.message);
  }
  out->send(reply);
  out->finish();
}

json Session::dispatch(const Message& m) {
  if (m.method == "initialize") {
    auto it = m.params.find("protocolVersion");
    if (it == m.params.end() || !it->is_string())
      throw RpcFailure{kInvalidParams, "initialize: params.protocolVersion (a string) is required"};
    std::string version = negotiate_protocol_version(it->get<std::string>());
    {
      std::lock_guard lock(mutex_);
      protocol_version_ = version;
    }
    std::string client = m.params.value("/clientInfo/name"_json_pointer, std::string("?"));
    options_.log("initialize from " + client + ": client asked " + it->get<std::string>() +
                 ", speaking " + version);
    json result = {
        {"protocolVersion", version},
        {"capabilities", {{"tools", {{"listChanged", false}}}}},
        {"serverInfo",
         {{"name", options_.name}, {"title", options_.title}, {"version", options_.version}}}};
    if (!options_.instructions.empty()) result["instructions"] = options_.instructions;
    return result;
  }
  if (m.method == "ping") return json::object();
  if (!initialized()) throw RpcFailure{kInvalidRequest, "send initialize before " + m.method};
  if (m.method == "tools/list") return tools_.list_json();
  throw RpcFailure{kMethodNotFound, "Method not found: " + m.method};
}

void Session::on_cancelled(const json& params) {
  auto it = params.find("requestId");
  if (it == params.end()) return;
  std::string key = id_key(*it);
  std::lock_guard lock(mutex_);
  auto job = in_flight_.find(key);
  if (job == in_flight_.end()) return;  // finished already, or never ours: ignore (spec)
  job->second->cancel = true;
  std::string reason = params.value("reason", std::string("no reason given"));
  options_.log("request " + key + " (" + job->second->tool +
               ") cancelled by the client: " + reason);
}

void Session::finish_request(const std::string& key) {
  std::lock_guard lock(mutex_);
  in_flight_.erase(key);
  if (in_flight_.empty()) idle_.notify_all();
}

namespace {

// What to tell the caller when a handler throws: the library's message
// (which names the file/field and the fix) under the tool's name.
std::string failure_text(const std::string& tool, const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e))
    return tool + " failed (" + to_string(err->kind()) + "): " + err->what();
  return tool + " failed: " + e.what();
}

}  // namespace

void Session::call_tool(const Message& m, const std::shared_ptr<Outbox>& out) {
  auto reject = [&](const std::string& message) {
    options_.log("tools/call: " + message);
    out->send(make_error(m.id, kInvalidParams, message));
    out->finish();
  };
  auto name_it = m.params.find("name");
  if (name_it == m.params.end() || !name_it->is_string())
    return reject("tools/call: params.name (a string) is required");
  std::string name = name_it->get<std::string>();
  const Tool* tool = tools_.find(name);
  if (!tool) return reject("Unknown tool: " + name + " (tools/list names the tools)");
  json args = m.params.contains("arguments") ? m.params["arguments"] : json::object();
  if (args.is_null()) args = json::object();
  if (!args.is_object())
    return reject("Invalid arguments for " + name + ": arguments must be an object");
  if (auto bad = check_schema(tool->input_schema, args))
    return reject("Invalid arguments for " + name + ": " + bad->describe());

  json progress_token;
  if (auto meta = m.params.find("_meta"); meta != m.params.end() && meta->is_object())
    progress_token = meta->value("progressToken", json());

  std::string key = id_key(m.id);
  auto job = std::make_shared<InFlight>();
  job->tool = name;
  {
    std::lock_guard lock(mutex_);
    if (in_flight_.count(key)) {
      out->send(make_error(m.id, kInvalidRequest, "request id " + key + " is already in flight"));
      out->finish();
      return;
    }
    in_flight_[key] = job;
  }

  auto run = [this, tool, args, progress_token, key, job, out, id = m.id] {
    ToolCall call;
    call.arguments = args;
    call.cancel = &job->cancel;
    call.command_line = "mcp tools/call " + tool->name + " " + args.dump();
    if (!progress_token.is_null()) {
      auto last = std::make_shared<double>(0);
      auto progress_mutex = std::make_shared<std::mutex>();
      call.progress = [out, progress_token, job, last, progress_mutex](const ToolProgress& p) {
        if (job->cancel) return;
        std::lock_guard lock(*progress_mutex);
        // The spec wants progress to grow with each notification.
        double value = std::max(p.progress, *last);
        *last = value;
        json params = {{"progressToken", progress_token}, {"progress", value}};
        if (p.total) params["total"] = *p.total;
        if (!p.message.empty()) params["message"] = p.message;
        out->send(make_notification("notifications/progress", std::move(params)));
      };
    }
    json result;
    auto started = std::chrono::steady_clock::now();
    if (job->cancel) {
      result = tool_error_result(tool->name + " was cancelled before it started");
    } else {
      try {
        ToolOutput output = tool->handler(call);
        if (auto bad = check_schema(tool->output_schema, output.structured, "structuredContent")) {
          result = tool_error_result("internal error: " + tool->name +
                                     " produced output that does not match its outputSchema (" +
                                     bad->describe() + "); please report this as a Magpie bug");
        } else {
          result = tool_result(output);
        }
      } catch (const std::exception& e) {
        result = tool_error_result(failure_text(tool->name, e));
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    bool cancelled = job->cancel.load();
    options_.log("tools/call " + tool->name + " (request " + key + "): " +
                 (cancelled                        ? "cancelled"
                  : result.value("isError", false) ? "error"
                                                   : "ok") +
                 fmt::format(" in {:.2f} s", seconds));
    if (!cancelled) out->send(make_result(id, std::move(result)));
    // The caller's stream closes before the session counts the call as done,
    // so whoever waits for idle sees every stream finished.
    out->finish();
    finish_request(key);
  };
  if (tool->long_running)
    jobs_.submit(std::move(run));
  else
    run();
}

}  // namespace magpie::mcp
