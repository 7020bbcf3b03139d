#include "kernel/harness_worker.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <cstring>

namespace magpie::kernel {

namespace fs = std::filesystem;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A FIFO opened read-write: opening never blocks for a peer, and a write never
// gets SIGPIPE or EPIPE when the worker is gone (its death is seen by waitpid).
int open_fifo(const fs::path& p, int extra_flags) {
  fs::remove(p);
  if (::mkfifo(p.c_str(), 0600) != 0) return -1;
  return ::open(p.c_str(), O_RDWR | O_CLOEXEC | extra_flags);
}

}  // namespace

HarnessWorker::~HarnessWorker() { stop(); }

void HarnessWorker::end(const char* /*why*/) {
  if (child_) child_->terminate_group(std::chrono::milliseconds(2000), ChildProcess::Wait::kLeader);
  if (child_) child_->kill_group();  // leftovers of the group, if any
  for (int* fd : {&requests_fd_, &responses_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  // The FIFOs go with the worker: a results folder holds files only (a
  // FIFO cannot be copied, e.g. when Ray gathers a job's output).
  for (const auto& f : fifos_) {
    std::error_code ec;
    fs::remove(f, ec);
  }
  fifos_.clear();
  alive_ = false;
}

WorkerReply HarnessWorker::start(Command argv, const fs::path& cwd, const std::map<std::string, std::string>& env,
                                 const fs::path& log, const fs::path& dir, std::chrono::milliseconds timeout,
                                 const std::atomic<bool>* cancel) {
  WorkerReply r = launch(std::move(argv), cwd, env, log, dir);
  return r.failure.empty() ? await_ready(timeout, cancel) : r;
}

WorkerReply HarnessWorker::launch(Command argv, const fs::path& cwd, const std::map<std::string, std::string>& env,
                                  const fs::path& log, const fs::path& dir) {
  stop();
  ready_ = false;
  exit_asked_ = false;
  ++starts_;
  log_ = log;
  pending_.clear();
  WorkerReply r;
  const fs::path req = dir / "worker.requests", resp = dir / "worker.responses";
  fifos_ = {req, resp};
  requests_fd_ = open_fifo(req, 0);
  responses_fd_ = open_fifo(resp, O_NONBLOCK);
  if (requests_fd_ < 0 || responses_fd_ < 0) {
    r.failure = fmt::format("cannot create the worker's FIFOs in {}: {}", dir.string(), std::strerror(errno));
    end("fifo");
    return r;
  }
  argv.insert(argv.end(), {"--requests", req.string(), "--responses", resp.string()});
  {
    std::ofstream(log, std::ios::app) << "$ " << shell_join(argv) << "\n";
  }
  child_ = std::make_unique<ChildProcess>();
  ChildSpec spec{argv, cwd, env, log, /*parent_death_signal=*/true, /*default_signals=*/false};
  if (int err = child_->start(spec); err != 0) {
    r.failure = fmt::format("could not start the harness worker `{}`: {}", shell_join(argv), std::strerror(err));
    end("spawn");
    return r;
  }
  alive_ = true;
  return r;
}

WorkerReply HarnessWorker::await_ready(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  WorkerReply r = await_line(timeout, cancel);
  if (r.ok && !r.answer.value("ready", false)) {
    r.ok = false;
    r.failure = r.answer.value("error", std::string("the worker did not start"));
    end("not ready");
  }
  ready_ = r.ok;
  return r;
}

WorkerReply HarnessWorker::request(nlohmann::json req, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>* cancel) {
  WorkerReply r;
  if (!alive_) {
    r.failure = "the harness worker is not running";
    return r;
  }
  const int id = next_id_++;
  req["id"] = id;
  const std::string line = req.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(requests_fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.failure = fmt::format("cannot send a request to the harness worker: {}", std::strerror(errno));
      end("write");
      return r;
    }
    off += static_cast<size_t>(n);
  }
  for (;;) {
    r = await_line(timeout, cancel);
    if (!r.ok || r.answer.value("id", -1) == id) return r;
    // An answer to an earlier request that timed out cannot arrive: that worker was killed.
  }
}

WorkerReply HarnessWorker::await_line(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  WorkerReply r;
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + timeout;
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      r.wall_seconds = since(t0);
      try {
        r.answer = nlohmann::json::parse(line);
        r.ok = r.answer.is_object();
      } catch (const std::exception& ex) {
        r.ok = false;
      }
      if (!r.ok) {
        r.failure = "the harness worker wrote an unreadable answer: " + line.substr(0, 200);
        end("garbled");
      }
      return r;
    }
    if (cancel != nullptr && cancel->load()) {
      r.cancelled = true;
      r.failure = "cancelled";
      end("cancel");
      return r;
    }
    if (!child_->running()) {
      // Whatever it wrote before it ended is still in the FIFO: read it first.
      char buf[65536];
      ssize_t n = ::read(responses_fd_, buf, sizeof buf);
      if (n > 0) {
        pending_.append(buf, static_cast<size_t>(n));
        continue;
      }
      r.wall_seconds = since(t0);
      r.failure = fmt::format("the harness worker ended ({}) before answering", child_->exit_status());
      end("died");
      return r;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      r.wall_seconds = since(t0);
      r.timed_out = true;
      r.failure = fmt::format("timed out after {:.1f} s", r.wall_seconds);
      end("timeout");
      return r;
    }
    pollfd p{responses_fd_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (ready > 0 && (p.revents & POLLIN) != 0) {
      char buf[65536];
      ssize_t n = ::read(responses_fd_, buf, sizeof buf);
      if (n > 0) pending_.append(buf, static_cast<size_t>(n));
    }
  }
}

void HarnessWorker::ask_exit() {
  if (!alive_ || exit_asked_ || !child_ || !child_->running() || requests_fd_ < 0) return;
  const std::string line = nlohmann::json{{"id", next_id_++}, {"op", "exit"}}.dump() + "\n";
  exit_asked_ = ::write(requests_fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

void HarnessWorker::stop() {
  if (!alive_) return;
  ask_exit();
  if (exit_asked_ && child_) {
    for (int i = 0; i < 100 && child_->running(); ++i) ::usleep(20000);
  }
  end("stop");
}

}  // namespace magpie::kernel
