#pragma once
// HTTP/1.1 client on Boost.Beast. Two faces:
//  * StreamingHttpClient: POSTs whose bodies are delivered as they arrive,
//    over a pool of keep-alive connections with no cap (a cap would turn the
//    client into a hidden concurrency limit). Everything runs on the caller's
//    io_context thread.
//  * http_request: a blocking one-shot request with a deadline, for /health,
//    /v1/models, /metrics and the profiler endpoints.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/endpoint.hpp"
#include "serve/sse_parser.hpp"

namespace magpie::serve {

struct StreamEnd {
  enum class Kind { kComplete, kConnectFailed, kTransport, kTimeout, kCancelled };
  Kind kind = Kind::kComplete;
  int status = 0;       // HTTP status, 0 when no header arrived
  std::string message;  // transport error text
};

struct StreamHandlers {
  std::function<void(Clock::time_point)> on_sent;  // request fully written
  std::function<void(int status)> on_status;
  // Body bytes (de-chunked) and the time the read that produced them completed.
  std::function<void(std::string_view, Clock::time_point)> on_body;
  std::function<void(const StreamEnd&)> on_done;  // exactly once
};

class StreamingHttpClient {
 public:
  StreamingHttpClient(boost::asio::io_context& io, Endpoint endpoint);
  ~StreamingHttpClient();
  StreamingHttpClient(const StreamingHttpClient&) = delete;
  StreamingHttpClient& operator=(const StreamingHttpClient&) = delete;

  // Starts a POST of a JSON body; `timeout` bounds the whole exchange;
  // `headers` are added as given (a sticky-session header).
  void post(std::string target, std::string body, std::chrono::milliseconds timeout,
            StreamHandlers handlers, const std::vector<std::pair<std::string, std::string>>& headers = {});
  // Aborts every exchange in flight (their on_done reports kCancelled).
  void cancel_all();

  size_t connections_opened() const;
  size_t connections_reused() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

struct HttpResult {
  bool ok = false;  // a response arrived (any status)
  int status = 0;
  std::string body;
  std::string error;  // transport error when !ok
  bool refused = false;     // nothing listens at the address (ECONNREFUSED)
  bool unresolved = false;  // the host name does not resolve
};

// Blocking request with a deadline; never throws for network failures.
HttpResult http_request(const Endpoint& endpoint, std::string_view method, std::string_view target,
                        std::string_view body, std::chrono::milliseconds timeout);

}  // namespace magpie::serve
