#include "mcp/job_runner.hpp"

#include <algorithm>

namespace magpie::mcp {

JobRunner::JobRunner(size_t max_jobs) : max_jobs_(std::max<size_t>(1, max_jobs)) {
  workers_.reserve(max_jobs_);
  for (size_t i = 0; i < max_jobs_; ++i) workers_.emplace_back([this] { worker(); });
}

JobRunner::~JobRunner() { shutdown(); }

void JobRunner::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(job));
      wake_.notify_one();
      return;
    }
  }
  job();
}

size_t JobRunner::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

size_t JobRunner::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

void JobRunner::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

void JobRunner::worker() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    job();
    std::lock_guard lock(mutex_);
    --running_;
  }
}

}  // namespace magpie::mcp
