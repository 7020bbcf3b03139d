// A measuring device, not a product part: an OpenAI-compatible endpoint that
// answers every POST with the same pre-rendered SSE stream (N choice chunks,
// a usage chunk, [DONE]) as fast as one core can, over HTTP/1.1 keep-alive.
// Against it, a client's own costs are all that is left to measure.
//
//   instrument_server [--port 0] [--tokens 16] [--threads 1]
// prints "port N" on stdout once it listens; GET /health and /v1/models answer
// so clients' readiness checks pass.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string chunk(const std::string& s) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%zx\r\n", s.size());
  return hex + s + "\r\n";
}

std::string render_stream(int tokens) {
  std::string out =
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
      "transfer-encoding: chunked\r\n\r\n";
  for (int i = 0; i < tokens; ++i)
    out += chunk(
        "data: "
        "{\"id\":\"cmpl-0\",\"object\":\"text_completion\",\"created\":0,\"model\":\"instrument\","
        "\"choices\":[{\"index\":0,\"text\":\" w" +
        std::to_string(i) + "\",\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n");
  out += chunk(
      "data: "
      "{\"id\":\"cmpl-0\",\"object\":\"text_completion\",\"created\":0,\"model\":\"instrument\","
      "\"choices\":[],\"usage\":{\"prompt_tokens\":32,\"total_tokens\":" +
      std::to_string(32 + tokens) + ",\"completion_tokens\":" + std::to_string(tokens) + "}}\n\n");
  out += chunk("data: [DONE]\n\n");
  out += "0\r\n\r\n";
  return out;
}

std::string render_json(const std::string& body) {
  return "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct Responses {
  std::string stream, models, health;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, const Responses& r) : socket_(std::move(s)), r_(r) {}
  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(boost::none);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return;
                       self->respond();
                     });
  }
  void respond() {
    const auto& req = parser_->get();
    const std::string* out = &r_.stream;
    if (req.method() == http::verb::get)
      out = req.target().find("/v1/models") == 0 ? &r_.models : &r_.health;
    asio::async_write(socket_, asio::buffer(*out),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec) self->read();
                      });
  }
  tcp::socket socket_;
  const Responses& r_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

void accept(tcp::acceptor& a, const Responses& r) {
  a.async_accept([&a, &r](beast::error_code ec, tcp::socket s) {
    if (!ec) {
      s.set_option(tcp::no_delay(true));
      std::make_shared<Session>(std::move(s), r)->start();
    }
    accept(a, r);
  });
}

}  // namespace

int main(int argc, char** argv) {
  unsigned short port = 0;
  int tokens = 16, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--port")
      port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
    else if (k == "--tokens")
      tokens = std::atoi(argv[i + 1]);
    else if (k == "--threads")
      threads = std::atoi(argv[i + 1]);
  }
  Responses r;
  r.stream = render_stream(tokens);
  r.models =
      render_json("{\"object\":\"list\",\"data\":[{\"id\":\"instrument\",\"object\":\"model\"}]}");
  r.health = render_json("{}");
  asio::io_context io(threads);
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.listen(4096);
  std::printf("port %u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  accept(acceptor, r);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
}
