// Load generator and HTTP client against an in-process fake OpenAI server on
// 127.0.0.1: keep-alive reuse, concurrency cap, failures by reason (mid-stream
// error, closed without [DONE], HTTP 500, timeout, refused), server death.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/http_client.hpp"
#include "serve/load_generator.hpp"
#include "serve/serving_metrics.hpp"

namespace magpie::serve {
namespace {

// Blocking thread-per-connection server. Behaviour by max_tokens:
// 990 = error event mid-stream, 991 = close mid-stream, 992 = HTTP 500,
// 993 = stall; otherwise max_tokens chunks 1 ms apart, usage, [DONE].
class FakeServer {
 public:
  FakeServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 128);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~FakeServer() { stop(); }
  void stop() {
    if (stopped_.exchange(true)) return;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (int c : conns_) ::shutdown(c, SHUT_RDWR);
    for (auto& t : workers_) t.join();
  }
  uint16_t port() const { return port_; }
  int connections() const { return accepted_.load(); }
  int max_active() const { return max_active_.load(); }

 private:
  void accept_loop() {
    while (!stopped_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++accepted_;
      std::lock_guard lock(mu_);
      conns_.push_back(c);
      workers_.emplace_back([this, c] { serve(c); });
    }
  }
  static bool send_all(int c, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(c, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  static std::string chunk(const std::string& s) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%zx\r\n", s.size());
    return hex + s + "\r\n";
  }
  void serve(int c) {
    std::string buf;
    char tmp[8192];
    while (true) {
      size_t hdr_end;
      while ((hdr_end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
        if (n <= 0) return ::close(c), void();
        buf.append(tmp, static_cast<size_t>(n));
      }
      size_t cl = 0;
      if (auto p = buf.find("Content-Length: "); p != std::string::npos && p < hdr_end)
        cl = std::stoul(buf.substr(p + 16));
      while (buf.size() < hdr_end + 4 + cl) {
        ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
        if (n <= 0) return ::close(c), void();
        buf.append(tmp, static_cast<size_t>(n));
      }
      std::string body = buf.substr(hdr_end + 4, cl);
      buf.erase(0, hdr_end + 4 + cl);
      int tokens = 4;
      if (auto p = body.find("\"max_tokens\":"); p != std::string::npos)
        tokens = std::stoi(body.substr(p + 13));
      int now = ++active_;
      int prev = max_active_.load();
      while (now > prev && !max_active_.compare_exchange_weak(prev, now)) {
      }
      bool keep = respond(c, tokens);
      --active_;
      if (!keep) return ::close(c), void();
    }
  }
  bool respond(int c, int tokens) {
    if (tokens == 992) {
      std::string b = "{\"error\":\"boom\"}";
      return send_all(c,
                      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
                      "application/json\r\nContent-Length: " +
                          std::to_string(b.size()) + "\r\n\r\n" + b);
    }
    if (!send_all(c,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: "
                  "chunked\r\n\r\n"))
      return false;
    if (tokens == 993) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      return false;
    }
    int n = tokens >= 990 ? 2 : tokens;
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!send_all(c, chunk("data: {\"choices\":[{\"text\":\"t\"}]}\n\n"))) return false;
    }
    if (tokens == 990) send_all(c, chunk("data: {\"error\":{\"message\":\"engine died\"}}\n\n"));
    if (tokens == 991) return false;  // close without [DONE] or the terminating chunk
    send_all(c, chunk(": ping\n\ndata: "
                      "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" +
                      std::to_string(n) + "}}\n\ndata: [DONE]\n\n"));
    return send_all(c, "0\r\n\r\n");
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<int> accepted_{0}, active_{0}, max_active_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> workers_;
};

LoadOptions options_for(uint16_t port, std::vector<int64_t> output_lens) {
  LoadOptions o;
  o.endpoint.port = port;
  o.request.model = "m";
  for (auto n : output_lens) {
    Prompt p;
    p.token_ids = {1, 2, 3};
    p.prompt_len = 3;
    p.output_len = n;
    o.prompts.push_back(p);
  }
  o.num_prompts = o.prompts.size();
  o.request_timeout = std::chrono::seconds(5);
  return o;
}

TEST(LoadGenerator, CleanRunWithConcurrencyCapAndKeepAlive) {
  FakeServer server;
  auto o = options_for(server.port(), std::vector<int64_t>(40, 5));
  o.max_concurrency = 4;
  o.warmups = 4;
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 40u);
  for (const auto& rec : r.records) {
    EXPECT_TRUE(rec.success) << rec.error;
    EXPECT_EQ(rec.output_tokens, 5);
    EXPECT_EQ(rec.itl.size(), 4u);
    EXPECT_GT(rec.ttft, 0);
    EXPECT_GE(rec.latency, rec.ttft);
  }
  EXPECT_EQ(r.peak_concurrency, 4);
  EXPECT_LE(server.max_active(), 4);
  EXPECT_LE(server.connections(), 4);  // keep-alive: no new connection per request
  MetricsInput mi;
  mi.records = &r.records;
  mi.duration_s = r.duration_s;
  auto m = compute_metrics(mi);
  EXPECT_EQ(m.completed, 40u);
  EXPECT_GT(m.client_queue.mean_ms, 0);  // 40 requests through 4 slots wait
}

// Sessions: each turn follows its session's previous reply (after the think
// time), sessions under way are capped, and a failed turn ends its session:
// its later turns are never sent and are counted as not sent.
TEST(LoadGenerator, SessionsSendTurnsInOrderAndAFailedTurnEndsItsSession) {
  FakeServer server;
  auto o = options_for(server.port(), {4});  // the warm-up prompt
  for (int s = 0; s < 3; ++s) {
    Session session;
    session.system_prompt = "sys";
    for (int t = 0; t < 3; ++t)
      session.turns.push_back({"turn " + std::to_string(t), 2, s == 1 && t == 1 ? 992 : 3, t ? 0.005 : 0.0});
    o.sessions.push_back(session);
  }
  o.num_prompts = 9;
  o.max_sessions = 2;
  o.max_concurrency = 8;
  o.warmups = 1;
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 8u);
  EXPECT_EQ(r.not_sent, 1u);  // session 1's last turn
  EXPECT_EQ(r.peak_concurrency, 2);  // two sessions under way, one request each
  std::map<int64_t, std::vector<const RequestRecord*>> by_session;
  for (const auto& rec : r.records) by_session[rec.session].push_back(&rec);
  ASSERT_EQ(by_session.size(), 3u);
  for (auto& [s, recs] : by_session) {
    std::sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->start_s < b->start_s; });
    for (size_t t = 0; t < recs.size(); ++t) {
      EXPECT_EQ(recs[t]->turn, static_cast<int32_t>(t));
      if (t) {  // after the previous reply and the think time, never before
        EXPECT_GE(recs[t]->start_s, recs[t - 1]->start_s + recs[t - 1]->latency + 0.005);
      }
    }
    EXPECT_EQ(recs.size(), s == 1 ? 2u : 3u);
  }
  EXPECT_FALSE(by_session[1][1]->success);
  MetricsInput mi;
  mi.records = &r.records;
  mi.duration_s = r.duration_s;
  auto m = compute_metrics(mi);
  ASSERT_EQ(m.by_turn.size(), 3u);
  EXPECT_EQ(m.by_turn[0].completed, 3u);
  EXPECT_EQ(m.by_turn[1].completed, 2u);
  EXPECT_EQ(m.by_turn[1].failed, 1u);
  EXPECT_EQ(m.by_turn[2].completed, 2u);
}

// Sub-agents (dataset agentic_coding): a child starts after its parent's turn
// spawn_after_turn has its reply, never before, and carries its parent; a
// parent that fails first takes its children's turns with it (not sent).
TEST(LoadGenerator, SubAgentsStartAfterTheirParentsTurnWithItsHistory) {
  FakeServer server;
  auto o = options_for(server.port(), {4});
  auto session = [](int turns, int64_t fail_turn) {
    Session s;
    s.system_prompt = "sys";
    for (int t = 0; t < turns; ++t)
      s.turns.push_back({"turn " + std::to_string(t), 2, t == fail_turn ? 992 : 3, 0.0});
    return s;
  };
  o.sessions.push_back(session(3, -1));  // 0: a parent
  for (int c = 0; c < 2; ++c) {          // 1, 2: its sub-agents, after turn 1
    auto sub = session(2, -1);
    sub.parent = 0;
    sub.spawn_after_turn = 1;
    o.sessions.push_back(sub);
  }
  o.sessions.push_back(session(2, 0));  // 3: a parent whose first turn fails
  auto orphan = session(2, -1);         // 4: never started
  orphan.parent = 3;
  orphan.spawn_after_turn = 0;
  o.sessions.push_back(orphan);
  o.num_prompts = 3 + 2 + 2 + 2 + 2;
  o.max_concurrency = 8;
  auto r = run_load(o);
  EXPECT_EQ(r.not_sent, 1u + 2u);  // parent 3's second turn, and its sub-agent's two
  std::map<int64_t, std::vector<const RequestRecord*>> by_session;
  for (const auto& rec : r.records) by_session[rec.session].push_back(&rec);
  ASSERT_EQ(by_session.size(), 4u);
  EXPECT_EQ(by_session.count(4), 0u);
  const RequestRecord* spawn = nullptr;
  for (auto* rec : by_session[0])
    if (rec->turn == 1) spawn = rec;
  ASSERT_NE(spawn, nullptr);
  for (int64_t c : {1, 2}) {
    ASSERT_EQ(by_session[c].size(), 2u);
    for (auto* rec : by_session[c]) {
      EXPECT_EQ(rec->parent_session, 0);
      EXPECT_GE(rec->start_s, spawn->start_s + spawn->latency);
      // Its prompt holds the parent's history: longer than the parent's turn-1 prompt.
      EXPECT_GT(rec->prompt_len, spawn->prompt_len);
    }
  }
  EXPECT_EQ(by_session[0].front()->parent_session, -1);
}

// A concurrency ramp: one request in flight for the first step, then three.
TEST(LoadGenerator, AConcurrencyRampMovesTheCap) {
  FakeServer server;
  auto o = options_for(server.port(), {20});  // 20 chunks 1 ms apart: ~20 ms a request
  o.num_prompts = 0;
  o.duration_s = 0.4;
  o.max_concurrency = 3;
  o.concurrency_changes = {{0.0, 1}, {0.2, 3}};
  auto r = run_load(o);
  EXPECT_EQ(r.peak_concurrency, 3);
  std::vector<std::pair<double, double>> first;  // requests started in the first step: never two at once
  for (const auto& rec : r.records)
    if (rec.start_s < 0.2) first.emplace_back(rec.start_s, rec.start_s + rec.latency);
  ASSERT_GT(first.size(), 2u);
  std::sort(first.begin(), first.end());
  for (size_t i = 1; i < first.size(); ++i) EXPECT_GE(first[i].first, first[i - 1].second);
  for (const auto& rec : r.records) EXPECT_LT(rec.scheduled_s, 0.4);  // nothing sent past the ramp's end
}

// Recorded traffic: each prompt leaves at its own offset, never earlier.
TEST(LoadGenerator, AFixedScheduleIsKept) {
  FakeServer server;
  auto o = options_for(server.port(), {2, 2, 2, 2});
  o.schedule_s = {0.0, 0.02, 0.02, 0.05};
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 4u);
  for (const auto& rec : r.records) {
    EXPECT_EQ(rec.scheduled_s, o.schedule_s[rec.index]);
    EXPECT_GE(rec.start_s, rec.scheduled_s);
  }
  MetricsInput mi;
  mi.records = &r.records;
  mi.duration_s = r.duration_s;
  EXPECT_EQ(compute_metrics(mi).send_lateness.count, 4u);
}

TEST(LoadGenerator, FailuresByReason) {
  FakeServer server;
  auto o = options_for(server.port(), {990, 991, 992, 993, 3});
  o.request_timeout = std::chrono::milliseconds(300);
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 5u);
  std::map<uint64_t, FailureReason> by_index;
  for (const auto& rec : r.records) by_index[rec.index] = rec.failure;
  EXPECT_EQ(by_index[0], FailureReason::kStreamError);
  EXPECT_EQ(by_index[1], FailureReason::kIncompleteStream);
  EXPECT_EQ(by_index[2], FailureReason::kHttpStatus);
  EXPECT_EQ(by_index[3], FailureReason::kTimeout);
  EXPECT_EQ(by_index[4], FailureReason::kNone);
}

TEST(LoadGenerator, RefusedConnections) {
  uint16_t port;
  {
    FakeServer s;
    port = s.port();
  }
  auto o = options_for(port, {3, 3});
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 2u);
  for (const auto& rec : r.records) EXPECT_EQ(rec.failure, FailureReason::kConnectFailed);
}

TEST(LoadGenerator, ScheduleIsFollowedAtAFiniteRate) {
  FakeServer server;
  auto o = options_for(server.port(), std::vector<int64_t>(30, 2));
  o.arrivals.request_rate = 200;
  o.arrivals.seed = 1;
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 30u);
  for (const auto& rec : r.records) {
    EXPECT_TRUE(rec.success);
    EXPECT_GE(rec.start_s + 1e-9, rec.scheduled_s);
    EXPECT_LT(rec.overhead_s, 0.05);  // sent within 50 ms of its slot even on a loaded CI box
  }
  auto offsets = arrival_offsets(30, o.arrivals);
  EXPECT_GT(r.duration_s, offsets.back());
}

TEST(LoadGenerator, ServerDeathEndsTheRunEarly) {
  auto server = std::make_unique<FakeServer>();
  auto o = options_for(server->port(), std::vector<int64_t>(200, 20));
  o.max_concurrency = 2;
  std::atomic<int> done{0};
  o.on_record = [&](const RequestRecord&) {
    if (++done == 10) server->stop();
  };
  std::atomic<bool> alive{true};
  o.server_alive = [&] { return done.load() < 10; };
  auto r = run_load(o);
  EXPECT_TRUE(r.server_died);
  EXPECT_LT(r.records.size(), 200u);
  EXPECT_GT(r.not_sent, 0u);
}

TEST(LoadGenerator, StopFlagCancelsInFlight) {
  FakeServer server;
  auto o = options_for(server.port(), std::vector<int64_t>(4, 993));
  o.request_timeout = std::chrono::seconds(30);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    stop = true;
  });
  auto r = run_load(o);
  t.join();
  EXPECT_TRUE(r.interrupted);
  ASSERT_EQ(r.records.size(), 4u);
  for (const auto& rec : r.records) EXPECT_EQ(rec.failure, FailureReason::kCancelled);
}

TEST(LoadGenerator, DurationBoundedAtRateInfKeepsTheCapFull) {
  FakeServer server;
  auto o = options_for(server.port(), std::vector<int64_t>(3, 2));
  o.num_prompts = 0;
  o.duration_s = 0.3;
  o.max_concurrency = 3;
  auto r = run_load(o);
  EXPECT_GT(r.records.size(), 6u);  // prompts are cycled
  EXPECT_EQ(r.peak_concurrency, 3);
  for (const auto& rec : r.records) EXPECT_LT(rec.start_s, 0.3 + 1e-3);
  EXPECT_GE(r.duration_s, 0.3);
}

TEST(LoadGenerator, ChatStreams) {
  FakeServer server;
  auto o = options_for(server.port(), {4});
  o.request.api = ApiKind::kChat;
  auto r = run_load(o);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_TRUE(r.records[0].success) << r.records[0].error;
}

TEST(HttpRequest, GetAndRefused) {
  uint16_t port;
  {
    FakeServer s;
    port = s.port();
  }
  Endpoint ep;
  ep.port = port;
  auto r = http_request(ep, "GET", "/health", "", std::chrono::seconds(1));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.error.empty());
}

}  // namespace
}  // namespace magpie::serve
