#include "mcp/http_transport.hpp"

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "core/error.hpp"

namespace magpie::mcp {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using nlohmann::json;

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  boost::system::error_code ec;
  auto addr = net::ip::make_address(h, ec);
  return !ec && addr.is_loopback();
}

bool is_loopback_origin(const std::string& origin) {
  auto scheme_end = origin.find("://");
  if (scheme_end == std::string::npos) return false;
  std::string scheme = origin.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return false;
  std::string rest = origin.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find('/'));
  std::string host;
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) return false;
    host = rest.substr(0, close + 1);
  } else {
    host = rest.substr(0, rest.find(':'));
  }
  return is_loopback_host(host);
}

namespace {

// One request's messages on their way to the connection thread that writes them.
class ChannelOutbox : public Outbox {
 public:
  void send(const json& message) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(message);
    ready_.notify_all();
  }
  void finish() override {
    std::lock_guard lock(mutex_);
    finished_ = true;
    ready_.notify_all();
  }
  // The next message, or nullopt once finished and drained.
  std::optional<json> next() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return finished_ || !messages_.empty(); });
    if (messages_.empty()) return std::nullopt;
    json m = std::move(messages_.front());
    messages_.pop_front();
    return m;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<json> messages_;
  bool finished_ = false;
};

class DiscardOutbox : public Outbox {
 public:
  void send(const json&) override {}
};

std::string new_session_id() {
  std::random_device rd;
  std::string id;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += hex[rd() % 16];
  return id;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool is_known_method(const std::string& method) {
  return method == "initialize" || method == "ping" || method == "tools/list" ||
         method == "tools/call";
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  const ToolRegistry& tools;
  JobRunner& jobs;
  ServerOptions server;
  HttpOptions http;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Session>> sessions;

  State(const ToolRegistry& t, JobRunner& j, ServerOptions s, HttpOptions h)
      : tools(t), jobs(j), server(std::move(s)), http(std::move(h)) {}

  void accept_next();
  void serve_connection(tcp::socket socket);
  // Answers one request; returns false when the connection must close.
  bool handle(tcp::socket& socket, http::request<http::string_body>& req);
  bool handle_post(tcp::socket& socket, http::request<http::string_body>& req);
};

namespace {

using Request = http::request<http::string_body>;

bool write_plain(tcp::socket& socket, const Request& req, http::status status,
                 const std::string& body, const std::string& content_type = "application/json",
                 const std::map<std::string, std::string>& headers = {}) {
  http::response<http::string_body> res{status, req.version()};
  res.set(http::field::server, "magpie-mcp");
  if (!body.empty()) res.set(http::field::content_type, content_type);
  for (const auto& [k, v] : headers) res.set(k, v);
  res.keep_alive(req.keep_alive());
  res.body() = body;
  res.prepare_payload();
  beast::error_code ec;
  http::write(socket, res, ec);
  return !ec && req.keep_alive();
}

bool write_rpc_error(tcp::socket& socket, const Request& req, http::status status, int code,
                     const std::string& message) {
  return write_plain(socket, req, status, dump(make_error(nullptr, code, message)));
}

}  // namespace

HttpServer::HttpServer(const ToolRegistry& tools, JobRunner& jobs, ServerOptions server,
                       HttpOptions http_options)
    : state_(std::make_shared<State>(tools, jobs, std::move(server), std::move(http_options))) {
  auto& s = *state_;
  if (!is_loopback_host(s.http.host) && s.http.token.empty())
    throw Error(ErrorKind::kUsage,
                "refusing to serve MCP on non-loopback address " + s.http.host +
                    " without a token: anyone who can reach it could run benchmarks and commands",
                {}, std::nullopt,
                "pass --token T (clients send 'Authorization: Bearer T'), or bind 127.0.0.1");
  boost::system::error_code ec;
  std::string host = s.http.host == "localhost" ? "127.0.0.1" : s.http.host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  auto addr = net::ip::make_address(host, ec);
  if (ec)
    throw Error(ErrorKind::kUsage, "not an IP address: " + s.http.host, {}, std::nullopt,
                "use 127.0.0.1, ::1, 0.0.0.0 or an interface address");
  tcp::endpoint ep(addr, s.http.port);
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw Error(
        ErrorKind::kUsage,
        "cannot listen on " + s.http.host + ":" + std::to_string(s.http.port) + ": " + ec.message(),
        {}, std::nullopt, "choose another port with --http HOST:PORT or MAGPIE_PORT");
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const {
  boost::system::error_code ec;
  auto ep = state_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void HttpServer::run() {
  auto s = state_;
  s->accept_next();
  s->ioc.run();
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(s->mutex);
    for (auto& [id, session] : s->sessions) sessions.push_back(session);
    s->sessions.clear();
  }
  for (auto& session : sessions) session->cancel_all("server stopping");
  for (auto& session : sessions) session->wait_idle(std::chrono::minutes(2));
}

void HttpServer::stop() {
  auto s = state_;
  net::post(s->ioc, [s] {
    boost::system::error_code ec;
    s->acceptor.close(ec);
  });
  s->ioc.stop();
}

void HttpServer::State::accept_next() {
  acceptor.async_accept(
      [self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
        if (ec) {
          if (self->acceptor.is_open()) self->accept_next();
          return;
        }
        // One thread per connection: requests on it are synchronous and a tool
        // call may hold it for as long as the job runs.
        std::thread([self, sock = std::move(socket)]() mutable {
          self->serve_connection(std::move(sock));
        }).detach();
        self->accept_next();
      });
}

void HttpServer::State::serve_connection(tcp::socket socket) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    beast::error_code ec;
    http::read(socket, buffer, parser, ec);
    if (ec) break;  // closed, or not HTTP
    Request req = parser.release();
    if (!handle(socket, req)) break;
  }
  beast::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

bool HttpServer::State::handle(tcp::socket& socket, Request& req) {
  std::string target(req.target());
  target = target.substr(0, target.find('?'));
  if (auto origin = req.find(http::field::origin); origin != req.end()) {
    std::string o(origin->value());
    if (!is_loopback_origin(o)) {
      http.log("HTTP 403: Origin " + o + " is not a loopback origin");
      return write_rpc_error(socket, req, http::status::forbidden, kInvalidRequest,
                             "Forbidden: Origin " + o + " is not allowed");
    }
  }
  if (target == "/health") {
    if (req.method() != http::verb::get && req.method() != http::verb::head)
      return write_plain(socket, req, http::status::method_not_allowed, "", "", {{"Allow", "GET"}});
    return write_plain(socket, req, http::status::ok, R"({"status":"ok"})");
  }
  if (target != "/mcp")
    return write_plain(socket, req, http::status::not_found,
                       R"({"error":"not found: the MCP endpoint is /mcp"})");
  if (!http.token.empty()) {
    auto auth = req.find(http::field::authorization);
    std::string given = auth == req.end() ? "" : std::string(auth->value());
    if (!constant_time_equal(given, "Bearer " + http.token)) {
      http.log("HTTP 401: missing or wrong bearer token");
      return write_plain(socket, req, http::status::unauthorized,
                         dump(make_error(nullptr, kInvalidRequest,
                                         "Unauthorized: send 'Authorization: Bearer <token>'")),
                         "application/json", {{"WWW-Authenticate", "Bearer"}});
    }
  }
  if (req.method() == http::verb::get)
    return write_plain(socket, req, http::status::method_not_allowed, "", "",
                       {{"Allow", "POST, DELETE"}});
  if (req.method() == http::verb::delete_) {
    std::string id(req["Mcp-Session-Id"]);
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mutex);
      if (auto it = sessions.find(id); it != sessions.end()) {
        session = it->second;
        sessions.erase(it);
      }
    }
    if (!session)
      return write_rpc_error(socket, req, http::status::not_found, kInvalidRequest,
                             "unknown session");
    session->cancel_all("session deleted by the client");
    http.log("session " + id + " closed");
    return write_plain(socket, req, http::status::ok, "");
  }
  if (req.method() != http::verb::post)
    return write_plain(socket, req, http::status::method_not_allowed, "", "",
                       {{"Allow", "GET, POST, DELETE"}});
  return handle_post(socket, req);
}

bool HttpServer::State::handle_post(tcp::socket& socket, Request& req) {
  std::string content_type(req[http::field::content_type]);
  if (content_type.find("application/json") == std::string::npos)
    return write_rpc_error(socket, req, http::status::unsupported_media_type, kInvalidRequest,
                           "Content-Type must be application/json");
  ParseOutcome parsed = parse_message(req.body());
  if (parsed.error)
    return write_plain(socket, req, http::status::bad_request, dump(make_error(*parsed.error)));
  const Message& msg = *parsed.message;

  std::shared_ptr<Session> session;
  std::string session_id(req["Mcp-Session-Id"]);
  bool is_initialize = msg.kind == MessageKind::kRequest && msg.method == "initialize";
  if (is_initialize) {
    session_id = new_session_id();
    session = std::make_shared<Session>(tools, jobs, server);
  } else {
    if (session_id.empty() && msg.kind == MessageKind::kRequest && !is_known_method(msg.method))
      // A sessionless probe (newer clients try server/discover first): say we
      // do not have it, so the client falls back to initialize.
      return write_plain(
          socket, req, http::status::ok,
          dump(make_error(msg.id, kMethodNotFound, "Method not found: " + msg.method)));
    if (session_id.empty())
      return write_rpc_error(socket, req, http::status::bad_request, kInvalidRequest,
                             "Bad Request: Mcp-Session-Id header required (send initialize first)");
    {
      std::lock_guard lock(mutex);
      if (auto it = sessions.find(session_id); it != sessions.end()) session = it->second;
    }
    if (!session)
      return write_rpc_error(socket, req, http::status::not_found, kInvalidRequest,
                             "Session not found: initialize a new session");
  }
  // Absent is allowed (the spec then assumes an older revision; we go by the
  // version the session negotiated).
  std::string version(req["MCP-Protocol-Version"]);
  if (!version.empty() && !is_initialize) {
    const auto& ok = supported_protocol_versions();
    if (std::find(ok.begin(), ok.end(), version) == ok.end())
      return write_rpc_error(socket, req, http::status::bad_request, kInvalidRequest,
                             "Bad Request: unsupported MCP-Protocol-Version " + version);
  }

  if (msg.kind != MessageKind::kRequest) {
    session->handle(msg, std::make_shared<DiscardOutbox>());
    return write_plain(socket, req, http::status::accepted, "");
  }

  std::string accept(req[http::field::accept]);
  bool wants_progress = msg.method == "tools/call" && msg.params.contains("_meta") &&
                        msg.params["_meta"].is_object() &&
                        msg.params["_meta"].contains("progressToken");
  bool stream = wants_progress && accept.find("text/event-stream") != std::string::npos;
  auto outbox = std::make_shared<ChannelOutbox>();
  session->handle(msg, outbox);
  std::map<std::string, std::string> headers;
  if (is_initialize && session->initialized()) {
    std::lock_guard lock(mutex);
    sessions[session_id] = session;
    headers["Mcp-Session-Id"] = session_id;
    http.log("session " + session_id + " opened");
  }

  if (!stream) {
    std::optional<json> response;
    while (auto m = outbox->next())
      if (!m->contains("method")) response = std::move(*m);  // drop progress: none was asked for
    if (!response) return write_plain(socket, req, http::status::accepted, "", "", headers);
    return write_plain(socket, req, http::status::ok, dump(*response), "application/json", headers);
  }

  // Server-sent events: progress notifications as they come, then the result.
  http::response<http::empty_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "magpie-mcp");
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  for (const auto& [k, v] : headers) res.set(k, v);
  res.chunked(true);
  res.keep_alive(req.keep_alive());
  http::response_serializer<http::empty_body> sr{res};
  beast::error_code ec;
  http::write_header(socket, sr, ec);
  bool alive = !ec;
  while (auto m = outbox->next()) {
    if (!alive) continue;  // the client left; keep draining so the job can finish
    std::string event = "event: message\ndata: " + dump(*m) + "\n\n";
    net::write(socket, http::make_chunk(net::buffer(event)), ec);
    if (ec) alive = false;
  }
  if (alive) net::write(socket, http::make_chunk_last(), ec);
  return alive && !ec && req.keep_alive();
}

}  // namespace magpie::mcp
