#include "mcp/stdio_transport.hpp"

#include <istream>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>

namespace magpie::mcp {

namespace {

class LineWriter {
 public:
  explicit LineWriter(std::ostream& out) : out_(out) {}
  void write(const nlohmann::json& message) {
    // Invalid UTF-8 from a tool (a binary in a log tail) must not break the stream.
    std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::lock_guard lock(mutex_);
    out_ << line << '\n';
    out_.flush();
    if (!out_) failed_ = true;
  }
  bool failed() {
    std::lock_guard lock(mutex_);
    return failed_;
  }

 private:
  std::ostream& out_;
  std::mutex mutex_;
  bool failed_ = false;
};

class StdoutOutbox : public Outbox {
 public:
  explicit StdoutOutbox(std::shared_ptr<LineWriter> writer) : writer_(std::move(writer)) {}
  void send(const nlohmann::json& message) override { writer_->write(message); }

 private:
  std::shared_ptr<LineWriter> writer_;
};

}  // namespace

int serve_stdio(std::istream& in, std::ostream& out, Session& session) {
  auto writer = std::make_shared<LineWriter>(out);
  auto outbox = std::make_shared<StdoutOutbox>(writer);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    session.handle_text(line, outbox);
    if (writer->failed()) break;
  }
  if (session.in_flight() > 0) {
    session.cancel_all(writer->failed() ? "stdout closed" : "stdin closed");
    session.wait_idle(std::chrono::minutes(2));
  }
  return writer->failed() ? 1 : 0;
}

}  // namespace magpie::mcp
