#pragma once
// A client of Ray's Jobs REST API, the one the dashboard serves (default port
// 8265): submit, status, logs, stop, list, plus the version probe that tells
// "cluster up" from "cluster unreachable" within seconds. Typed requests and
// answers; JSON stays inside this file's .cpp.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ray/ray_config.hpp"

namespace magpie::ray {

enum class JobStatus { kPending, kRunning, kStopped, kSucceeded, kFailed, kUnknown };
const char* to_string(JobStatus s);
JobStatus parse_job_status(const std::string& s);
inline bool terminal(JobStatus s) {
  return s == JobStatus::kStopped || s == JobStatus::kSucceeded || s == JobStatus::kFailed;
}

struct JobSubmission {
  std::string entrypoint;     // a shell command the head runs (Ray's "driver")
  std::string submission_id;  // ours, so a retry after a lost answer does not submit twice
  std::map<std::string, std::string> env_vars;  // runtime_env.env_vars
  std::string working_dir;                      // runtime_env.working_dir (a URI), optional
  std::map<std::string, std::string> metadata;  // shown by `ray job list`, returned by list()
  std::optional<double> entrypoint_num_cpus, entrypoint_num_gpus, entrypoint_memory_bytes;
  std::map<std::string, double> entrypoint_resources;
};

struct JobInfo {
  std::string submission_id;
  JobStatus status = JobStatus::kUnknown;
  std::string message;     // Ray's words: why PENDING, how it failed
  std::string error_type;  // e.g. JOB_ENTRYPOINT_COMMAND_ERROR
  std::string entrypoint;
  std::map<std::string, std::string> metadata;
  std::optional<int64_t> start_time_ms, end_time_ms;
  std::optional<int> driver_exit_code;  // the entrypoint's exit status, when it ran
};

struct ClientOptions {
  std::map<std::string, std::string> headers;  // e.g. Authorization for a proxied dashboard
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
};

class JobsClient {
 public:
  explicit JobsClient(ClusterAddress address, ClientOptions options = {});
  const ClusterAddress& address() const { return address_; }

  // GET /api/version → Ray's version. Throws Error(kUnreachable) naming the
  // address and what to do when nothing answers there.
  std::string ray_version() const;
  std::string submit(const JobSubmission& job) const;    // → submission_id
  JobInfo info(const std::string& submission_id) const;  // throws kNotFound for an unknown id
  std::string logs(const std::string& submission_id) const;
  bool stop(const std::string& submission_id) const;  // true when Ray stopped it now
  std::vector<JobInfo> list() const;
  // One line on what the cluster has and uses ("ResourceUsage: 0.0/2.0 CPU, ..."),
  // for the message of a job that waits for resources; "" when unavailable.
  std::string resource_summary() const;

  struct Response {
    int status = 0;
    std::string body;
  };
  // One request; throws kUnreachable on transport failure.
  Response request(const std::string& method, const std::string& path,
                   const std::string& body = {}) const;

 private:
  ClusterAddress address_;
  ClientOptions options_;
};

// How wait_for_job polls: backoff from `first_poll` doubling to `max_poll`.
struct WaitOptions {
  std::chrono::milliseconds first_poll{250};
  std::chrono::milliseconds max_poll{3000};
  double pending_timeout_s =
      600;  // PENDING longer → Error(kRejected) with the cluster's resources; job stopped
  double timeout_s = 0;             // 0 = none; past it the job is stopped, Error(kRejected)
  double unreachable_grace_s = 30;  // the dashboard may stop answering this long mid-wait
  const std::atomic<bool>* cancel =
      nullptr;  // set → returns the info as it stands (caller stops or detaches)
  std::function<void(const JobInfo&)> on_change;  // status changed (and once at start)
  std::function<void(const JobInfo&)> on_poll;    // after every status poll (log following)
};

JobInfo wait_for_job(const JobsClient& client, const std::string& submission_id,
                     const WaitOptions& options);

// Follows a job's log while it runs by asking for the whole log
// (GET /api/jobs/{id}/logs) and keeping what is new: plain HTTP like the rest
// of the client, so it works through the same proxies and headers (Ray's
// websocket tail endpoint often does not). Hands out whole lines only; the
// unfinished last line waits for its newline, or for finish().
class LogFollower {
 public:
  LogFollower(const JobsClient& client, std::string submission_id)
      : client_(client), id_(std::move(submission_id)) {}
  // Complete lines written since the last call; "" when none (or the
  // dashboard did not answer this time: the next call catches up).
  std::string poll();
  // Everything not handed out yet, the unfinished last line included.
  std::string finish();
  // Feeds a whole log as fetched; returns the new complete lines (poll's core).
  std::string take(const std::string& log);

 private:
  const JobsClient& client_;
  std::string id_;
  size_t seen_ = 0;  // bytes of the log already handed out
  std::string log_;  // the last log fetched
};

// The last `n` lines of a log.
std::string last_lines(const std::string& text, size_t n);

}  // namespace magpie::ray
