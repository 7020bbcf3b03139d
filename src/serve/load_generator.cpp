#include "serve/load_generator.hpp"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cmath>
#include <deque>
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "serve/http_client.hpp"
#include "serve/openai_stream.hpp"

namespace magpie::serve {

namespace {

using secs = std::chrono::duration<double>;

// State of one run. Lives on the stack of run_load; every callback runs on
// its io_context thread.
class Run {
 public:
  Run(const LoadOptions& o, boost::asio::io_context& io)
      : o_(o), io_(io), client_(io, o.endpoint), arrival_(io), watchdog_(io) {
    target_ = o.endpoint.target(endpoint_path(o.request.api));
    bodies_.reserve(o.prompts.size());
    for (const auto& p : o.prompts) bodies_.push_back(build_request_body(p, o.request));
  }

  LoadResult execute() {
    if (o_.prompts.empty()) throw Error(ErrorKind::kUsage, "no prompts to send");
    start_watchdog();
    if (o_.warmups > 0) {
      phase_ = Phase::kWarmup;
      for (size_t i = 0; i < o_.warmups; ++i) enqueue(Pending{i, 0, true});
      io_.run();
      io_.restart();
      if (stopping_) return finish_early();
      start_watchdog();
    }
    phase_ = Phase::kMeasure;
    if (o_.on_measure_start) o_.on_measure_start();
    infinite_rate_ = std::isinf(o_.arrivals.request_rate);
    if (sessions_mode()) {
      if (o_.duration_s > 0) throw Error(ErrorKind::kUsage, "a session workload runs a number of sessions, not a duration");
      index_sessions();
      offsets_ = arrival_offsets(roots_.size(), o_.arrivals);  // top-level session starts
      sessions_.resize(o_.sessions.size());
    } else if (!o_.schedule_s.empty()) {
      if (o_.duration_s > 0) throw Error(ErrorKind::kUsage, "a recorded schedule is bounded by its own length");
      offsets_ = o_.schedule_s;
    } else if (o_.duration_s > 0) {
      if (!o_.concurrency_changes.empty() && !infinite_rate_)
        throw Error(ErrorKind::kUsage, "a concurrency ramp refills freed slots at once: it takes no request rate");
      if (infinite_rate_ && o_.max_concurrency == 0 && o_.concurrency_changes.empty())
        throw Error(ErrorKind::kUsage,
                    "a duration-bounded run at rate inf needs --max-concurrency");
      if (!infinite_rate_) offsets_ = arrival_offsets_for(o_.duration_s, o_.arrivals);
    } else {
      offsets_ = arrival_offsets(o_.num_prompts, o_.arrivals);
    }
    t0_ = Clock::now();
    end_ = t0_ + std::chrono::duration_cast<Clock::duration>(secs(o_.duration_s));
    dispatch();
    maybe_stop_io();
    io_.run();
    result_.duration_s = secs(last_done_ - t0_).count();
    if (result_.records.empty()) result_.duration_s = secs(Clock::now() - t0_).count();
    result_.connections_opened = client_.connections_opened();
    if (sessions_mode() && !stopping_) result_.not_sent += skipped_turns_;
    if (o_.progress) std::cerr << "\n";
    return std::move(result_);
  }

 private:
  enum class Phase { kWarmup, kMeasure };
  // One turn of a session, ready to send.
  struct TurnRequest {
    size_t session = 0, turn = 0;
    std::string body;
    int64_t prompt_len = 0, output_len = 0;
  };
  struct Pending {
    size_t index;
    double scheduled_s;
    bool warmup;
    Clock::time_point ready{};  // when it could have been sent (schedule or freed slot)
    std::shared_ptr<const TurnRequest> turn{};  // set for a session's turn
  };
  // A session under way: its history so far and the turn to send next.
  struct SessionState {
    std::vector<ChatMessage> history;
    size_t next_turn = 0;
    std::unique_ptr<boost::asio::steady_timer> think;
  };
  struct Live {
    std::shared_ptr<const TurnRequest> turn;
    RequestRecord record;
    SseParser parser;
    OpenAiStreamReader reader;
    std::vector<SseEvent> events;
    std::string error_body;
    Clock::time_point start;
  };

  LoadResult finish_early() {
    result_.interrupted = interrupted_;
    return std::move(result_);
  }

  bool duration_mode() const { return o_.duration_s > 0; }
  bool sessions_mode() const { return !o_.sessions.empty(); }
  size_t planned_requests() const {
    return sessions_mode() ? o_.num_prompts : planned() == SIZE_MAX ? 0 : planned();
  }
  size_t planned() const { return duration_mode() && infinite_rate_ ? SIZE_MAX : offsets_.size(); }

  void dispatch() {
    if (stopping_) return;
    auto now = Clock::now();
    if (duration_mode() && infinite_rate_) {
      follow_ramp(now);
      while (in_flight_ < cap() && now < end_) {
        enqueue(Pending{next_++, secs(now - t0_).count(), false, now});
      }
      return;  // completions refill
    }
    while (next_ < offsets_.size()) {
      auto due = t0_ + std::chrono::duration_cast<Clock::duration>(secs(offsets_[next_]));
      if (due > now) {
        arrival_.expires_at(due);
        arrival_.async_wait([this](boost::system::error_code ec) {
          if (!ec) dispatch();
        });
        return;
      }
      if (sessions_mode())
        session_arrives(roots_[next_], due);
      else
        enqueue(Pending{next_, offsets_[next_], false, due});
      ++next_;
    }
  }

  // The cap on requests in flight now: the concurrency ramp's, else max_concurrency (0 = none).
  size_t cap() const {
    if (phase_ == Phase::kMeasure && !o_.concurrency_changes.empty())
      return static_cast<size_t>(o_.concurrency_changes[ramp_step_].second);
    return o_.max_concurrency == 0 ? SIZE_MAX : o_.max_concurrency;
  }

  // A concurrency ramp: move to the step that holds `now`, and wake at the next
  // one (a raised cap is filled then, not at the next completion).
  void follow_ramp(Clock::time_point now) {
    const auto& ch = o_.concurrency_changes;
    if (ch.empty()) return;
    const double t = secs(now - t0_).count();
    while (ramp_step_ + 1 < ch.size() && ch[ramp_step_ + 1].first <= t) ++ramp_step_;
    if (ramp_step_ + 1 >= ch.size() || armed_step_ == ramp_step_ + 1) return;
    armed_step_ = ramp_step_ + 1;
    arrival_.expires_at(t0_ + std::chrono::duration_cast<Clock::duration>(secs(ch[armed_step_].first)));
    arrival_.async_wait([this](boost::system::error_code ec) {
      if (!ec) dispatch();
    });
  }

  void enqueue(Pending p) {
    if (p.ready == Clock::time_point{}) p.ready = Clock::now();
    if (in_flight_ < cap()) {
      launch(p, 0.0);
    } else {
      waiting_.push_back(p);
    }
  }

  // Sessions: a session starts when its arrival is due and a session slot is free.
  void session_arrives(size_t s, Clock::time_point due) {
    if (o_.max_sessions == 0 || active_sessions_ < o_.max_sessions) {
      start_session(s, due);
    } else {
      waiting_sessions_.emplace_back(s, due);
    }
  }

  // Top-level sessions (started on the arrival schedule) and each parent's sub-agents.
  void index_sessions() {
    children_.assign(o_.sessions.size(), {});
    for (size_t s = 0; s < o_.sessions.size(); ++s) {
      const auto& ss = o_.sessions[s];
      if (ss.parent < 0) {
        roots_.push_back(s);
        continue;
      }
      const auto p = static_cast<size_t>(ss.parent);
      if (p >= s || ss.spawn_after_turn >= o_.sessions[p].turns.size())
        throw Error(ErrorKind::kInternal,
                    fmt::format("session {}: its parent {} must come before it and have turn {}", s, p,
                                ss.spawn_after_turn));
      children_[p].push_back(s);
    }
  }

  void start_session(size_t s, Clock::time_point ready) {
    ++active_sessions_;
    // A sub-agent's history is its parent's, copied when it was spawned.
    if (o_.sessions[s].parent < 0 && !o_.sessions[s].system_prompt.empty())
      sessions_[s].history.push_back({"system", o_.sessions[s].system_prompt});
    send_turn(s, ready);
  }

  // The parent's turn `turn` has its reply: its sub-agents for that turn start now.
  void spawn_children(size_t parent, size_t turn, Clock::time_point now) {
    for (size_t c : children_[parent]) {
      if (o_.sessions[c].spawn_after_turn != turn) continue;
      sessions_[c].history = sessions_[parent].history;
      session_arrives(c, now);
    }
  }

  // A session that will not run (its parent failed first): its turns, and its own sub-agents', are not sent.
  void abandon(size_t s) {
    skipped_turns_ += o_.sessions[s].turns.size();
    ++sessions_done_;
    for (size_t c : children_[s]) abandon(c);
  }

  // The turn's request: the whole history, then the new user message.
  void send_turn(size_t s, Clock::time_point ready) {
    auto& st = sessions_[s];
    const auto& turn = o_.sessions[s].turns[st.next_turn];
    st.history.push_back({"user", turn.text});
    Prompt prompt = session_turn_prompt(st.history, turn.output_len);
    auto req = std::make_shared<TurnRequest>();
    req->session = s;
    req->turn = st.next_turn;
    req->body = build_request_body(prompt, o_.request);
    req->prompt_len = prompt.prompt_len;
    req->output_len = turn.output_len;
    ++turns_sent_;
    enqueue(Pending{turn_index_++, secs(ready - t0_).count(), false, ready, std::move(req)});
  }

  // A turn finished: the reply joins the history and the next turn follows
  // after its think time; a failed turn ends its session (the rest are not sent).
  void turn_done(const TurnRequest& t, bool ok, std::string reply) {
    auto& st = sessions_[t.session];
    const auto& turns = o_.sessions[t.session].turns;
    if (ok) {
      st.history.push_back({"assistant", std::move(reply)});
      if (!children_[t.session].empty()) spawn_children(t.session, t.turn, Clock::now());
    } else {
      for (size_t c : children_[t.session])
        if (o_.sessions[c].spawn_after_turn >= t.turn) abandon(c);
    }
    if (ok && t.turn + 1 < turns.size()) {
      st.next_turn = t.turn + 1;
      if (!st.think) st.think = std::make_unique<boost::asio::steady_timer>(io_);
      auto ready = Clock::now() + std::chrono::duration_cast<Clock::duration>(secs(turns[st.next_turn].think_s));
      st.think->expires_at(ready);
      st.think->async_wait([this, s = t.session, ready](boost::system::error_code ec) {
        if (ec || stopping_) return maybe_stop_io();
        send_turn(s, ready);
      });
      return;
    }
    if (!ok) skipped_turns_ += turns.size() - t.turn - 1;
    st = SessionState{};
    --active_sessions_;
    ++sessions_done_;
    if (!waiting_sessions_.empty()) {
      auto [next, due] = waiting_sessions_.front();
      waiting_sessions_.pop_front();
      start_session(next, due);
    }
  }

  void launch(const Pending& p, double queue_s) {
    auto live = std::make_shared<Live>();
    auto& r = live->record;
    r.index = p.index;
    r.warmup = p.warmup;
    const std::string* body = nullptr;
    if (p.turn) {
      live->turn = p.turn;
      live->reader.keep_text();
      r.session = static_cast<int64_t>(p.turn->session);
      r.turn = static_cast<int32_t>(p.turn->turn);
      r.parent_session = o_.sessions[p.turn->session].parent;
      r.prompt_len = p.turn->prompt_len;
      r.expected_output_len = p.turn->output_len;
      body = &p.turn->body;
    } else {
      const auto& prompt = o_.prompts[p.warmup ? 0 : p.index % o_.prompts.size()];
      r.prompt_len = prompt.prompt_len;
      r.expected_output_len = prompt.output_len;
      body = &bodies_[p.warmup ? 0 : p.index % bodies_.size()];
    }
    live->start = Clock::now();
    r.scheduled_s = p.scheduled_s;
    r.start_s = secs(live->start - t0_).count();
    r.queue_s = queue_s;
    r.overhead_s = secs(live->start - p.ready).count();
    ++in_flight_;
    result_.peak_concurrency =
        std::max<int64_t>(result_.peak_concurrency, static_cast<int64_t>(in_flight_));
    StreamHandlers h;
    h.on_status = [live](int status) { live->record.http_status = status; };
    h.on_body = [this, live](std::string_view bytes, Clock::time_point t) {
      if (live->record.http_status != 200) {
        if (live->error_body.size() < 2000) live->error_body.append(bytes.substr(0, 2000));
        return;
      }
      live->parser.feed(bytes, t, live->events);
      if (live->events.empty()) return;
      for (auto& ev : live->events) live->reader.on_event(ev);
      if (phase_ == Phase::kMeasure) {
        auto now = Clock::now();
        for (const auto& ev : live->events)
          result_.record_lag_s.push_back(secs(now - ev.complete).count());
      }
      live->events.clear();
    };
    h.on_done = [this, live](const StreamEnd& end) { completed(*live, end); };
    std::vector<std::pair<std::string, std::string>> headers;
    if (p.turn && !o_.session_header.empty())
      headers.emplace_back(o_.session_header, fmt::format("session-{}", root_of(p.turn->session)));
    client_.post(target_, *body, o_.request_timeout, std::move(h), headers);
  }

  // Sub-agents carry their top-level session's id, so a server routing by it keeps them beside their prefix.
  size_t root_of(size_t s) const {
    while (o_.sessions[s].parent >= 0) s = static_cast<size_t>(o_.sessions[s].parent);
    return s;
  }

  void completed(Live& live, const StreamEnd& end) {
    auto& r = live.record;
    live.reader.finish(live.start, live.parser.has_partial(), r);
    using K = StreamEnd::Kind;
    bool stream_ok = r.success;
    if (end.kind == K::kComplete && r.http_status != 200) {
      r.success = false;
      r.failure = FailureReason::kHttpStatus;
      r.error = fmt::format("HTTP {}: {:.500}", r.http_status, live.error_body);
    } else if (end.kind != K::kComplete && !(stream_ok && live.reader.done())) {
      r.success = false;
      r.failure = end.kind == K::kTimeout         ? FailureReason::kTimeout
                  : end.kind == K::kConnectFailed ? FailureReason::kConnectFailed
                  : end.kind == K::kCancelled     ? FailureReason::kCancelled
                                                  : FailureReason::kTransport;
      // A 200 stream cut off by the peer is a stream that ended without [DONE].
      if (r.failure == FailureReason::kTransport && r.http_status == 200)
        r.failure = FailureReason::kIncompleteStream;
      r.error = end.message;
    }
    --in_flight_;
    auto now = Clock::now();
    // A dead server fails requests faster than the watchdog ticks: look now.
    bool lost_server = !r.success && (r.failure == FailureReason::kConnectFailed ||
                                      r.failure == FailureReason::kTransport ||
                                      r.failure == FailureReason::kIncompleteStream);
    const bool r_ok = r.success;
    if (!r.warmup) {
      last_done_ = now;
      if (o_.on_record) o_.on_record(r);
      if (!r.success) ++failed_;
      result_.records.push_back(std::move(r));
    }
    if (lost_server && !stopping_) check();
    if (stopping_) {
      maybe_stop_io();
      return;
    }
    if (!waiting_.empty()) {
      Pending p = waiting_.front();
      waiting_.pop_front();
      double queue_s = secs(now - p.ready).count();
      p.ready = now;
      launch(p, queue_s);
    } else if (duration_mode() && infinite_rate_) {
      dispatch();
    }
    // After the queue: a request that waited for the freed slot goes first.
    if (live.turn) turn_done(*live.turn, r_ok, std::move(live.reader.text()));
    maybe_stop_io();
  }

  void maybe_stop_io() {
    bool issuing_done = stopping_ || phase_ == Phase::kWarmup ||
                        (next_ >= planned() && (!sessions_mode() || sessions_done_ == o_.sessions.size())) ||
                        (duration_mode() && infinite_rate_ && Clock::now() >= end_);
    if (in_flight_ == 0 && waiting_.empty() && issuing_done) {
      arrival_.cancel();
      watchdog_.cancel();
      io_.stop();
    }
  }

  void start_watchdog() {
    watchdog_.expires_after(std::chrono::milliseconds(100));
    watchdog_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      check();
      start_watchdog();
    });
  }

  void check() {
    auto now = Clock::now();
    bool interrupted = o_.stop && o_.stop->load();
    bool dead = o_.server_alive && !o_.server_alive();
    if ((interrupted || dead) && !stopping_) {
      stopping_ = true;
      interrupted_ = interrupted;
      result_.interrupted = interrupted;
      result_.server_died = dead;
      result_.not_sent =
          sessions_mode()
              ? waiting_.size() + o_.num_prompts - std::min(o_.num_prompts, turns_sent_)
              : waiting_.size() + (planned() == SIZE_MAX ? 0 : planned() - std::min(next_, planned()));
      waiting_.clear();
      arrival_.cancel();
      // Ctrl-C aborts what is in flight; after a server death the sockets fail by themselves.
      if (interrupted) client_.cancel_all();
      maybe_stop_io();
    }
    if (duration_mode() && !infinite_rate_ && next_ >= planned()) maybe_stop_io();
    if ((o_.progress || o_.on_progress) && phase_ == Phase::kMeasure &&
        now - last_progress_ > std::chrono::milliseconds(500)) {
      last_progress_ = now;
      double elapsed = secs(now - t0_).count();
      auto done = result_.records.size();
      std::string total =
          planned() == SIZE_MAX ? fmt::format("{:.0f}s", o_.duration_s) : std::to_string(planned_requests());
      std::string line = fmt::format("{}/{} done  {} in flight  {} queued  {} failed  {:.1f} req/s  {:.1f}s",
                                     done, total, in_flight_, waiting_.size(), failed_,
                                     elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0, elapsed);
      if (o_.progress) std::cerr << "\r  " << line << "   " << std::flush;
      if (o_.on_progress) o_.on_progress(done, planned_requests(), line);
    }
  }

  const LoadOptions& o_;
  boost::asio::io_context& io_;
  StreamingHttpClient client_;
  boost::asio::steady_timer arrival_, watchdog_;
  std::string target_;
  std::vector<std::string> bodies_;
  std::vector<double> offsets_;
  std::deque<Pending> waiting_;
  std::vector<SessionState> sessions_;
  std::vector<size_t> roots_;                 // sessions started on the arrival schedule
  std::vector<std::vector<size_t>> children_;  // each session's sub-agents
  std::deque<std::pair<size_t, Clock::time_point>> waiting_sessions_;
  size_t active_sessions_ = 0, sessions_done_ = 0, turns_sent_ = 0, turn_index_ = 0,
         skipped_turns_ = 0;
  Phase phase_ = Phase::kWarmup;
  bool infinite_rate_ = true;
  bool stopping_ = false, interrupted_ = false;
  size_t next_ = 0, in_flight_ = 0, failed_ = 0;
  size_t ramp_step_ = 0, armed_step_ = 0;  // concurrency ramp: the step in force, the one a timer waits for
  Clock::time_point t0_{}, end_{}, last_done_{}, last_progress_{};
  LoadResult result_;
};

}  // namespace

LoadResult run_load(const LoadOptions& options) {
  boost::asio::io_context io(1);
  Run run(options, io);
  return run.execute();
}

}  // namespace magpie::serve
