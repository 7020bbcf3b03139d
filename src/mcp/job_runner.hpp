#pragma once
// Long tool calls run here: at most `max_jobs` at once on worker threads, the
// rest wait in order. A job whose cancel flag is set before it starts is
// still handed to a worker (so its request is finished) but sees the flag at once.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace magpie::mcp {

class JobRunner {
 public:
  explicit JobRunner(size_t max_jobs = 1);
  ~JobRunner();  // finishes every queued job, then joins the workers
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Queues a job. After shutdown() the job runs on the caller's thread (so
  // its request still gets an answer); jobs are expected not to throw.
  void submit(std::function<void()> job);
  size_t max_jobs() const { return max_jobs_; }
  size_t running() const;
  size_t queued() const;
  // Stops taking new jobs, runs what is queued, joins the workers.
  void shutdown();

 private:
  void worker();
  size_t max_jobs_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace magpie::mcp
