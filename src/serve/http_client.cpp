#include "serve/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <unordered_set>
#include <vector>

namespace magpie::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Connection {
  explicit Connection(asio::io_context& io) : stream(io) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool used = false;  // served an exchange before: a failure may be a stale keep-alive
};

}  // namespace

struct StreamingHttpClient::Impl : std::enable_shared_from_this<StreamingHttpClient::Impl> {
  struct Exchange : std::enable_shared_from_this<Exchange> {
    std::shared_ptr<Impl> owner;
    std::unique_ptr<Connection> conn;
    http::request<http::string_body> request;
    std::unique_ptr<http::response_parser<http::buffer_body>> parser;
    std::chrono::milliseconds timeout{};
    StreamHandlers handlers;
    // Uninitialised: zeroing a buffer per request showed up in profiles.
    static constexpr size_t kChunkSize = 16 * 1024;
    std::unique_ptr<char[]> chunk{new char[kChunkSize]};
    bool got_bytes = false;
    bool retried = false;
    bool finished = false;
    bool cancelled = false;
    int status = 0;
  };

  Impl(asio::io_context& io_, Endpoint ep_) : io(io_), endpoint(std::move(ep_)), resolver(io_) {}

  asio::io_context& io;
  Endpoint endpoint;
  tcp::resolver resolver;
  std::vector<tcp::endpoint> addresses;
  std::vector<std::unique_ptr<Connection>> idle;
  std::unordered_set<Exchange*> live;
  size_t opened = 0, reused = 0;

  void start(const std::shared_ptr<Exchange>& ex) {
    if (!idle.empty()) {
      ex->conn = std::move(idle.back());
      idle.pop_back();
      ++reused;
      send(ex);
      return;
    }
    ex->conn = std::make_unique<Connection>(io);
    ++opened;
    ex->conn->stream.expires_after(ex->timeout);
    if (addresses.empty()) {
      // Resolve once; a benchmark talks to one server.
      beast::error_code ec;
      auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
      if (ec) return finish(ex, {StreamEnd::Kind::kConnectFailed, 0, "resolve: " + ec.message()});
      for (const auto& r : results) addresses.push_back(r.endpoint());
    }
    ex->conn->stream.async_connect(
        addresses, [this, ex](beast::error_code ec, const tcp::endpoint&) {
          if (ex->cancelled) return finish(ex, {StreamEnd::Kind::kCancelled, 0, "cancelled"});
          if (ec) {
            auto kind = ec == beast::error::timeout ? StreamEnd::Kind::kTimeout
                                                    : StreamEnd::Kind::kConnectFailed;
            return finish(ex, {kind, 0, "connect: " + ec.message()});
          }
          ex->conn->stream.socket().set_option(tcp::no_delay(true));
          send(ex);
        });
  }

  void send(const std::shared_ptr<Exchange>& ex) {
    ex->conn->stream.expires_after(ex->timeout);
    ex->parser = std::make_unique<http::response_parser<http::buffer_body>>();
    ex->parser->body_limit(boost::none);  // streams have no length limit
    http::async_write(ex->conn->stream, ex->request, [this, ex](beast::error_code ec, size_t) {
      if (ec) return transport_failure(ex, ec, "write");
      if (ex->handlers.on_sent) ex->handlers.on_sent(Clock::now());
      http::async_read_header(ex->conn->stream, ex->conn->buffer, *ex->parser,
                              [this, ex](beast::error_code ec2, size_t) {
                                if (ec2) return transport_failure(ex, ec2, "read header");
                                ex->got_bytes = true;
                                ex->status = static_cast<int>(ex->parser->get().result_int());
                                if (ex->handlers.on_status) ex->handlers.on_status(ex->status);
                                read_body(ex);
                              });
    });
  }

  void read_body(const std::shared_ptr<Exchange>& ex) {
    if (ex->parser->is_done()) return complete(ex);
    auto& body = ex->parser->get().body();
    body.data = ex->chunk.get();
    body.size = Exchange::kChunkSize;
    http::async_read_some(ex->conn->stream, ex->conn->buffer, *ex->parser,
                          [this, ex](beast::error_code ec, size_t) {
                            auto now = Clock::now();
                            if (ec == http::error::need_buffer) ec = {};
                            size_t got = Exchange::kChunkSize - ex->parser->get().body().size;
                            if (got > 0 && ex->handlers.on_body)
                              ex->handlers.on_body(std::string_view(ex->chunk.get(), got), now);
                            if (ec) return transport_failure(ex, ec, "read body");
                            read_body(ex);
                          });
  }

  void complete(const std::shared_ptr<Exchange>& ex) {
    bool keep = ex->parser->get().keep_alive();
    if (keep && !ex->cancelled) {
      ex->conn->used = true;
      ex->conn->stream.expires_never();
      idle.push_back(std::move(ex->conn));
    }
    finish(ex, {StreamEnd::Kind::kComplete, ex->status, {}});
  }

  void transport_failure(const std::shared_ptr<Exchange>& ex, beast::error_code ec,
                         const char* stage) {
    if (ex->cancelled) return finish(ex, {StreamEnd::Kind::kCancelled, ex->status, "cancelled"});
    if (ec == beast::error::timeout)
      return finish(ex, {StreamEnd::Kind::kTimeout, ex->status, std::string(stage) + ": timeout"});
    // The server may close an idle keep-alive connection just as we reuse it:
    // nothing was received, so retrying once on a fresh connection is safe.
    if (ex->conn && ex->conn->used && !ex->got_bytes && !ex->retried) {
      ex->retried = true;
      ex->conn.reset();
      return start(ex);
    }
    finish(ex, {StreamEnd::Kind::kTransport, ex->status, std::string(stage) + ": " + ec.message()});
  }

  void finish(const std::shared_ptr<Exchange>& ex, StreamEnd end) {
    if (ex->finished) return;
    ex->finished = true;
    live.erase(ex.get());
    ex->conn.reset();
    if (ex->handlers.on_done) ex->handlers.on_done(end);
    ex->handlers = {};  // break cycles held by captured state
  }
};

StreamingHttpClient::StreamingHttpClient(asio::io_context& io, Endpoint endpoint)
    : impl_(std::make_shared<Impl>(io, std::move(endpoint))) {}

StreamingHttpClient::~StreamingHttpClient() { cancel_all(); }

void StreamingHttpClient::post(std::string target, std::string body,
                               std::chrono::milliseconds timeout, StreamHandlers handlers,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  auto ex = std::make_shared<Impl::Exchange>();
  ex->owner = impl_;
  ex->timeout = timeout;
  ex->handlers = std::move(handlers);
  ex->request = http::request<http::string_body>(http::verb::post, target, 11);
  ex->request.set(http::field::host,
                  impl_->endpoint.host + ":" + std::to_string(impl_->endpoint.port));
  ex->request.set(http::field::content_type, "application/json");
  ex->request.set(http::field::accept, "text/event-stream");
  ex->request.set(http::field::user_agent, "magpie");
  for (const auto& [name, value] : headers) ex->request.set(name, value);
  ex->request.keep_alive(true);
  ex->request.body() = std::move(body);
  ex->request.prepare_payload();
  impl_->live.insert(ex.get());
  impl_->start(ex);
}

void StreamingHttpClient::cancel_all() {
  // Closing sockets makes every pending operation complete with an error.
  std::vector<Impl::Exchange*> live(impl_->live.begin(), impl_->live.end());
  for (auto* ex : live) {
    ex->cancelled = true;
    if (ex->conn) {
      beast::error_code ec;
      ex->conn->stream.socket().close(ec);
    }
  }
  impl_->idle.clear();
}

size_t StreamingHttpClient::connections_opened() const { return impl_->opened; }
size_t StreamingHttpClient::connections_reused() const { return impl_->reused; }

HttpResult http_request(const Endpoint& endpoint, std::string_view method, std::string_view target,
                        std::string_view body, std::chrono::milliseconds timeout) {
  HttpResult result;
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, endpoint.host + ":" + std::to_string(endpoint.port));
  req.set(http::field::user_agent, "magpie");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = std::string(body);
  req.keep_alive(false);
  req.prepare_payload();
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  tcp::resolver resolver(io);
  stream.expires_after(timeout);
  auto fail = [&](const char* stage, beast::error_code ec) {
    result.error = std::string(stage) + ": " + ec.message();
  };
  resolver.async_resolve(
      endpoint.host, std::to_string(endpoint.port),
      [&](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec) {
          result.unresolved = true;
          return fail("resolve", ec);
        }
        stream.async_connect(results, [&](beast::error_code ec2, const tcp::endpoint&) {
          if (ec2) {
            result.refused = ec2 == asio::error::connection_refused;
            return fail("connect", ec2);
          }
          http::async_write(stream, req, [&](beast::error_code ec3, size_t) {
            if (ec3) return fail("write", ec3);
            http::async_read(stream, buffer, parser, [&](beast::error_code ec4, size_t) {
              if (ec4) return fail("read", ec4);
              result.ok = true;
              result.status = static_cast<int>(parser.get().result_int());
              result.body = std::move(parser.get().body());
            });
          });
        });
      });
  io.run_for(timeout + std::chrono::milliseconds(100));
  if (!result.ok && result.error.empty()) result.error = "timed out";
  return result;
}

}  // namespace magpie::serve
