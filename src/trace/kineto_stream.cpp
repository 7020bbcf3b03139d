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

#include "core/cancel.hpp"
#include "core/parallel.hpp"
#include "core/phase_times.hpp"
#include "trace/kineto_chunks.hpp"

namespace magpie::trace {

namespace {

// How much text to look at for the event array's start, and how far past a
// chunk's target size to let the inflater run before looking for a cut.
constexpr size_t kLookAhead = size_t{64} << 10;

// Chunks handed from the planner (this thread) to the parsing workers. Each
// worker copies its chunk's text before parsing it; once every chunk up to some
// point has been copied, the text before that point is released to the
// ArrivingText, which then lets its producer run further ahead.
class ChunkQueue {
 public:
  explicit ChunkQueue(ArrivingText& text) : text_(text) {}
  // `region` is [begin, end) of the text; views are taken at push time because
  // the buffer's owner changes once the producer is finished (its address does not).
  void push(ChunkOutput* out, std::string_view region, size_t end) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({out, region, ends_.size()});
      ends_.push_back(end);
      copied_.push_back(false);
      chunks_.push_back(out);
      parsed_.push_back(false);
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
    merge_ready_.notify_all();
  }
  // While `limit` or more chunks wait to be copied, the planner parses them
  // itself instead of cutting further ahead: a planner that ran ahead of the
  // workers would ask for text past the window (wait_for lets the producer
  // past it), and the window would bound nothing.
  void parse_while_backlog(size_t limit, bool include_python) {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        if (ends_.size() - copied_count_ < limit || error_) return;
        if (queue_.empty()) {  // a worker is copying the last one queued
          copied_any_.wait(lock, [&] { return ends_.size() - copied_count_ < limit || error_ || !queue_.empty(); });
          continue;
        }
      }
      run_one(include_python, false);
    }
  }
  void abort_merge() {
    {
      std::lock_guard lock(mutex_);
      merge_aborted_ = true;
    }
    merge_ready_.notify_all();
  }
  // Folds parsed chunks into `merged` in chunk order as they complete, until
  // every chunk is folded, one failed (the caller then starts over), or abort_merge().
  void merge_all(ChunkMerge& merged) {
    while (merge_next(merged, true)) {
    }
  }
  // Folds the chunks parsed by now, without waiting (no worker threads).
  void merge_parsed(ChunkMerge& merged) {
    while (merge_next(merged, false)) {
    }
  }
  // True when every chunk was folded in (none failed, none left).
  bool merged_all() {
    std::lock_guard lock(mutex_);
    return !merge_broken_ && !merge_aborted_ && merged_ == parsed_.size();
  }
  // Parses chunks until the queue is closed and empty.
  void work(bool include_python) {
    while (run_one(include_python, true)) {
    }
  }
  // Parses the chunks queued now, without waiting for more (no worker threads).
  void drain(bool include_python) {
    while (run_one(include_python, false)) {
    }
  }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Job {
    ChunkOutput* out;
    std::string_view region;
    size_t index;
  };
  bool run_one(bool include_python, bool wait) {
    Job job{};
    {
      std::unique_lock lock(mutex_);
      if (wait) ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return false;
      job = queue_.front();
      queue_.pop_front();
    }
    try {
      parse_chunk(job.region, include_python, *job.out, [&] { copied(job.index); });
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      merge_aborted_ = true;
    }
    {
      std::lock_guard lock(mutex_);
      parsed_[job.index] = true;
    }
    merge_ready_.notify_all();
    return true;
  }
  bool merge_next(ChunkMerge& merged, bool wait) {
    ChunkOutput* out = nullptr;
    {
      std::unique_lock lock(mutex_);
      auto can_go = [&] { return merged_ < parsed_.size() && parsed_[merged_]; };
      auto done = [&] { return merge_aborted_ || merge_broken_ || (closed_ && merged_ == parsed_.size()); };
      if (wait) merge_ready_.wait(lock, [&] { return can_go() || done(); });
      if (merge_aborted_ || merge_broken_ || !can_go()) return false;
      out = chunks_[merged_];
      if (out->failed) {
        merge_broken_ = true;
        return false;
      }
    }
    merged.add(std::move(*out));
    std::lock_guard lock(mutex_);
    ++merged_;
    return true;
  }
  void copied(size_t index) {
    size_t release_to = 0;
    {
      std::lock_guard lock(mutex_);
      copied_[index] = true;
      ++copied_count_;
      copied_any_.notify_all();
      while (frontier_ < copied_.size() && copied_[frontier_]) ++frontier_;
      if (frontier_ == 0) return;
      release_to = ends_[frontier_ - 1];
    }
    text_.release(release_to);  // may be called out of order: release keeps the furthest
  }

  ArrivingText& text_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_;
  std::vector<size_t> ends_;
  std::vector<bool> copied_;
  size_t frontier_ = 0;  // chunks before it have all been copied
  size_t copied_count_ = 0;
  std::condition_variable copied_any_;
  bool closed_ = false;
  std::exception_ptr error_;
  // Folding, in chunk order: every chunk's output, whether it is parsed, and
  // how many are folded into the merge so far.
  std::condition_variable merge_ready_;
  std::vector<ChunkOutput*> chunks_;
  std::vector<bool> parsed_;
  size_t merged_ = 0;
  bool merge_broken_ = false;
  bool merge_aborted_ = false;
};

// The thread that folds parsed chunks into the trace's tables while later
// chunks are still parsing: chunk tables never pile up (peak memory), and the
// merge is no longer a serial step after the parse. Joined on every way out.
struct MergeThread {
  ChunkQueue& queue;
  std::thread thread;
  ~MergeThread() {
    if (thread.joinable()) {
      queue.abort_merge();
      thread.join();
    }
  }
  void join() {
    if (thread.joinable()) thread.join();
  }
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

  // 2. Cut chunks as the text arrives; workers parse them meanwhile. The text
  // before the array stays (its keys are read at the end); the event text is
  // dropped behind the workers, so memory holds a window of it, not all of it.
  const size_t target = options.chunk_bytes;
  if (options.text_window_bytes > 0) {
    // The planner looks up to target + kLookAhead past a cut: a smaller window
    // would only make it ask past the window at every chunk.
    arriving.set_window(std::max(options.text_window_bytes, 4 * (target + kLookAhead)), where.open + 1);
  }
  unsigned threads = options.threads ? options.threads : default_thread_count();
  ChunkQueue queue(arriving);
  std::vector<std::unique_ptr<ChunkOutput>> outputs;
  ChunkPlan plan;
  ChunkMerge merged;
  // Kineto events average ~330 bytes: room for more rows than come costs
  // address space only, while growing by doubling copies the columns.
  merged.reserve(arriving.expected_size() / 200);
  WorkerPool pool{queue, {}};
  MergeThread merger{queue, {}};
  auto add_chunk = [&](size_t b, size_t e) {
    plan.chunks.emplace_back(b, e);
    outputs.push_back(std::make_unique<ChunkOutput>());
    queue.push(outputs.back().get(), std::string_view(base + b, e - b), e);
    // With no worker thread the planner parses and folds each chunk itself, so
    // that the text behind it is released and the producer is never left waiting.
    if (pool.threads.empty()) {
      queue.drain(options.include_python_functions);
      queue.merge_parsed(merged);
    }
  };
  for (unsigned t = 1; t < threads; ++t) pool.threads.emplace_back([&] { queue.work(options.include_python_functions); });
  if (threads > 1) merger.thread = std::thread([&] { queue.merge_all(merged); });
  size_t begin = where.open + 1;
  // Chunks cut but not yet taken by a worker: a quarter of the window's worth.
  const size_t backlog = options.text_window_bytes > 0
                             ? std::max<size_t>(4, options.text_window_bytes / std::max<size_t>(target, 1) / 4)
                             : SIZE_MAX;
  bool cut_missed = false;
  for (;;) {
    if (!pool.threads.empty() && backlog != SIZE_MAX)
      queue.parse_while_backlog(backlog, options.include_python_functions);
    bool final = arriving.stopped();
    // Ask for what the next cut needs; more only when the text in did not hold
    // a cut (asking past what is in at every turn would let the producer past
    // the window for good).
    const size_t need = (cut_missed ? std::max(avail, begin + target) : begin + target) + kLookAhead;
    avail = arriving.wait_for(final ? SIZE_MAX : need);
    std::string_view text(base, avail);
    size_t cut = begin + target < avail ? next_fast_cut(text, begin + target) : std::string_view::npos;
    cut_missed = cut == std::string_view::npos;
    if (cut != std::string_view::npos) {
      add_chunk(begin, chunk_end_before(text, begin, cut));
      begin = cut;
      if (options.on_bytes) options.on_bytes(origin, begin, arriving.expected_size());
      // Workers and the producer are stopped by their owners' destructors.
      throw_if_cancelled(options.cancel, "reading " + origin);
    } else if (final) {
      break;
    }
  }
  magpie_phase::mark("inflate finished");
  auto done = arriving.finish();
  if (!done.streamed) {
    pool.join();  // the chunks came from text that turned out not to be the file's
    queue.abort_merge();
    merger.join();
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
  magpie_phase::mark("chunks parsed");
  if (pool.threads.empty()) queue.merge_parsed(merged);
  merger.join();
  queue.rethrow();
  const bool all_merged = queue.merged_all();
  if (arriving.released_any() && (!plan.closed || !all_merged)) {
    // A fast cut was wrong or the JSON is bad: the exact re-plan and the error's
    // offset need the whole text, and part of it is gone. Start over from it.
    outputs.clear();
    merged = ChunkMerge{};
    return parse_kineto(arriving.reload(), origin, options);
  }
  if (!plan.closed || !all_merged) {
    // The whole text is here: the exact re-plan (and the error, if the JSON is bad) come from it.
    outputs.clear();
    merged = ChunkMerge{};
    plan.closed = false;
    return finish_kineto(text, where, std::move(plan), {}, &done.text, origin, options);
  }
  outputs.clear();
  Trace top = read_top_level(text, where, plan.close, origin);
  done.text = PaddedBuffer{};
  return assemble_kineto(std::move(top), std::move(merged), where);
}

}  // namespace magpie::trace
