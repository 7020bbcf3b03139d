#pragma once
// Drives one measured run against an OpenAI-compatible server: warm-ups,
// then requests on an absolute arrival schedule (monotonic clock), capped at
// max_concurrency, bounded by a prompt count or a duration. Single-threaded
// on one io_context, so the client's own work is one core's worth of
// callbacks and nothing contends for a lock.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "serve/arrival_schedule.hpp"
#include "serve/dataset.hpp"
#include "serve/endpoint.hpp"
#include "serve/request_builder.hpp"
#include "serve/request_record.hpp"
#include "serve/sessions.hpp"

namespace magpie::serve {

struct LoadOptions {
  Endpoint endpoint;
  RequestOptions request;
  std::vector<Prompt> prompts;  // cycled when the run needs more
  size_t num_prompts = 0;       // measured requests; 0 with duration_s > 0
  double duration_s = 0;        // > 0: send until then, then drain
  ArrivalOptions arrivals;
  // Recorded traffic: prompts[i] is due at schedule_s[i] (replaces `arrivals`).
  std::vector<double> schedule_s;
  // Session workload: each session's turns are sent one after another, each
  // with the whole history (the model's replies included), after its think
  // time; `arrivals` then spaces session starts. max_concurrency still caps
  // requests in flight; max_sessions caps sessions under way (0 = unbounded).
  std::vector<Session> sessions;
  size_t max_sessions = 0;
  std::string session_header;  // when set, every request carries NAME: session id
  size_t max_concurrency = 0;  // 0 = unbounded
  // A concurrency ramp (duration_s > 0 at rate inf): from each (second, cap)
  // on, at most cap requests in flight; replaces max_concurrency.
  std::vector<std::pair<double, int64_t>> concurrency_changes;
  size_t warmups = 0;          // sent first (first prompt, same cap), not measured
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  std::function<void(const RequestRecord&)> on_record;  // each finished request, as it finishes
  bool progress = false;                                // live line on stderr
  // Requests done of planned (0 = a timed run), at most twice a second.
  std::function<void(size_t done, size_t planned, const std::string& line)> on_progress;
  const std::atomic<bool>* stop = nullptr;              // set by Ctrl-C
  std::function<bool()> server_alive;                   // polled; false ends the run early
  std::function<void()> on_measure_start;               // e.g. POST /start_profile
};

struct LoadResult {
  std::vector<RequestRecord> records;  // measured requests in completion order
  double duration_s = 0;               // first scheduled send → last completion
  int64_t peak_concurrency = 0;
  size_t not_sent = 0;       // scheduled but never sent (stopped early; a session's turns after a failure)
  bool interrupted = false;  // Ctrl-C
  bool server_died = false;
  size_t connections_opened = 0;
  // Client-added latency samples (seconds): each event's first byte → its record.
  std::vector<double> record_lag_s;
};

LoadResult run_load(const LoadOptions& options);

}  // namespace magpie::serve
