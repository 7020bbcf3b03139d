// Parsing a Kineto trace while its text is still arriving (inflated from
// .json.gz, or read from .json): the event array is cut into chunks as soon as
// a chunk's text is in, and workers parse them while the producer thread brings
// the rest. On a 2-core machine this hides most of the inflate (or read) time
// behind parsing.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/parallel.hpp"
#include "trace/kineto_chunks.hpp"

namespace magpie::trace {

namespace {

// How much text to look at for the event array's start, and how far past a
// chunk's target size to let the inflater run before looking for a cut.
constexpr size_t kLookAhead = size_t{64} << 10;

// Chunks handed from the planner (this thread) to the parsing workers.
class ChunkQueue {
 public:
  void push(ChunkOutput* out, std::string_view region) {
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(out, region);
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // Parses chunks until the queue is closed and empty.
  void work(bool include_python) {
    for (;;) {
      std::pair<ChunkOutput*, std::string_view> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty()) return;
        job = queue_.front();
        queue_.pop_front();
      }
      try {
        parse_chunk(job.second, include_python, *job.first);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<ChunkOutput*, std::string_view>> queue_;
  bool closed_ = false;
  std::exception_ptr error_;
};

// Closes the queue and joins the workers on every way out, exceptions included.
struct WorkerPool {
  ChunkQueue& queue;
  std::vector<std::thread> threads;
  ~WorkerPool() { join(); }
  void join() {
    queue.close();
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
};

}  // namespace

Trace parse_kineto(ArrivingText& arriving, const std::string& origin, const IngestOptions& options) {
  auto whole_text = [&] { return parse_kineto(arriving.finish().text, origin, options); };
  const char* base = arriving.data();  // stays put, also once finish() hands the buffer over
  // 1. The event array's '[' (a prefix answers as the whole text would).
  EventArrayLocation where;
  size_t avail = 0;
  for (;;) {
    bool final = arriving.stopped();  // read before the size, so that a final size is complete
    avail = arriving.wait_for(final ? SIZE_MAX : avail + kLookAhead);
    if (locate_event_array({base, avail}, where)) break;
    if (final) return whole_text();  // no event array, or a damaged stream: its own error
  }

  // 2. Cut chunks as the text arrives; workers parse them meanwhile.
  const size_t target = options.chunk_bytes;
  unsigned threads = options.threads ? options.threads : default_thread_count();
  ChunkQueue queue;
  std::vector<std::unique_ptr<ChunkOutput>> outputs;
  ChunkPlan plan;
  auto add_chunk = [&](size_t b, size_t e) {
    plan.chunks.emplace_back(b, e);
    outputs.push_back(std::make_unique<ChunkOutput>());
    queue.push(outputs.back().get(), std::string_view(base + b, e - b));
  };
  WorkerPool pool{queue, {}};
  for (unsigned t = 1; t < threads; ++t) pool.threads.emplace_back([&] { queue.work(options.include_python_functions); });
  size_t begin = where.open + 1;
  for (;;) {
    bool final = arriving.stopped();
    avail = arriving.wait_for(final ? SIZE_MAX : std::max(avail, begin + target) + kLookAhead);
    std::string_view text(base, avail);
    size_t cut = begin + target < avail ? next_fast_cut(text, begin + target) : std::string_view::npos;
    if (cut != std::string_view::npos) {
      add_chunk(begin, chunk_end_before(text, begin, cut));
      begin = cut;
      if (options.on_bytes) options.on_bytes(origin, begin, arriving.expected_size());
    } else if (final) {
      break;
    }
  }
  auto done = arriving.finish();
  if (!done.streamed) {
    pool.join();  // the chunks came from text that turned out not to be the file's
    return parse_kineto(std::move(done.text), origin, options);
  }
  // 3. The last stretch holds the array's ']': scanned exactly.
  std::string_view text = done.text.view();
  ChunkPlan tail = plan_chunks_fast_from(text, begin, target);
  for (auto [b, e] : tail.chunks) add_chunk(b, e);
  plan.close = tail.close;
  plan.closed = tail.closed;
  plan.scan_stopped_at = tail.scan_stopped_at;
  queue.close();
  queue.work(options.include_python_functions);
  pool.join();
  queue.rethrow();

  std::vector<ChunkOutput> parsed;
  parsed.reserve(outputs.size());
  for (auto& o : outputs) parsed.push_back(std::move(*o));
  outputs.clear();
  return finish_kineto(text, where, std::move(plan), std::move(parsed), &done.text, origin, options);
}

}  // namespace magpie::trace
