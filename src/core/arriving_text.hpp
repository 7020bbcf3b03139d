#pragma once
// Text that arrives on a background thread (inflated from gzip, or read from a
// file) into one buffer of known size, so that a reader can work on the first
// megabytes while the rest is still coming. ISA-L's igzip streams and, on a
// 220 MB trace here, inflates about 3x faster than libdeflate's one-shot call.
#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/file_io.hpp"

namespace magpie {

class ArrivingText {
 public:
  // Inflates `compressed` (a gzip stream: is_gzip), sized from its trailer.
  static std::unique_ptr<ArrivingText> inflate(PaddedBuffer compressed, std::string origin);
  // Reads a file; a missing or unreadable file throws here, as read_file does.
  static std::unique_ptr<ArrivingText> read(const std::filesystem::path& path);
  // A file's text: inflated when the file is gzip (by its magic bytes), the
  // compressed bytes read by the inflating thread as it goes, so the first text
  // comes after the first step of the file rather than after all of it; read
  // as it is otherwise. Errors as read().
  static std::unique_ptr<ArrivingText> open(const std::filesystem::path& path);
  // open(): whether the file is gzip, and its size on disk.
  bool inflating() const { return inflating_; }
  size_t file_bytes() const { return file_bytes_; }
  ~ArrivingText();
  ArrivingText(const ArrivingText&) = delete;
  ArrivingText& operator=(const ArrivingText&) = delete;

  // Blocks until at least `n` bytes are in or the producer has stopped; returns
  // how many bytes are in. Those bytes are final and stay where they are (until
  // released). Asking for bytes beyond the window lets the producer past it.
  size_t wait_for(size_t n);

  // Bounded memory: the producer stays at most `bytes` ahead of what the reader
  // released (0 = no bound, the default), so a 220 MB text never needs 220 MB
  // of memory at once. The buffer's address range stays whole; released pages
  // go back to the kernel.
  // The first `keep_prefix` bytes are never dropped (the text before a reader's
  // region of interest: a JSON document's keys before its big array).
  void set_window(size_t bytes, size_t keep_prefix = 0);
  // The reader will not read bytes before `offset` again: their pages are
  // dropped and the producer may go on. Bytes from offset 0 up to the first
  // call's... nothing: every byte before `offset` is gone, read as zero after.
  void release(size_t offset);
  // True once release() dropped any page: then finish().text has holes, and a
  // reader that needs the whole text again calls reload().
  bool released_any() const { return released_any_.load(std::memory_order_acquire); }
  const char* data() const { return data_; }
  // The size the text is expected to reach (the file's, or the gzip trailer's).
  size_t expected_size() const { return size_; }
  // True once the producer has stopped (finished, or given up).
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

  // How the window went, for tests and performance work.
  struct WindowStats {
    size_t units_recycled = 0;  // units whose pages were moved ahead of the producer
    size_t max_lead = 0;        // most bytes past the released offset after a step begun under the window
    bool recycling_failed = false;  // mremap refused (an old kernel): pages were dropped instead
  };
  WindowStats window_stats();

  // Waits for the producer. `streamed` tells whether the bytes handed out by
  // wait_for are the whole, checked text. When not (a gzip file with several
  // members, damage or a wrong trailer size; a file that changed size) the text
  // comes from the one-shot path instead (gunzip / read_file), which either
  // handles the file or throws Error naming the file and the byte offset.
  struct Result {
    PaddedBuffer text;
    bool streamed = false;
  };
  Result finish();
  // The whole text again from the one-shot path (gunzip / read_file), for a
  // reader that released bytes and then found it must start over (a fast chunk
  // cut that was wrong, bad JSON whose offset it must report).
  PaddedBuffer reload();

 private:
  ArrivingText() = default;
  void start(void (ArrivingText::*producer)());
  void inflate_all();
  void read_all();
  void publish(size_t bytes);
  // Producer side of the window: blocks while `done` bytes are as far ahead of
  // the released ones as the window allows and no reader asks for more.
  void wait_for_room(size_t done);
  void lift_window();
  // Page recycling: the producer gives the bytes it is about to write in
  // [done, done + step) pages that release() took from text already read.
  void back_ahead(size_t done, size_t step);
  void drop_recycled();  // the producer stopped: recycled pages go back to the kernel

  // The one-shot path's gzip bytes: compressed_, after reading the rest of the
  // file when the producer stopped before it had read all (only after a join).
  std::string_view gzip_bytes();

  PaddedBuffer compressed_;  // inflate: the gzip bytes
  int fd_ = -1;              // read: the open file
  int gz_fd_ = -1;           // open() of a gzip file: read by the producer into compressed_
  size_t gz_filled_ = 0;     // bytes of compressed_ read so far (all of it without gz_fd_)
  bool inflating_ = false;
  size_t file_bytes_ = 0;
  std::string origin_;
  PaddedBuffer out_;
  // out_'s address and size, fixed when it is made: finish() hands out_ to
  // its caller while readers on other threads may still release() text.
  char* data_ = nullptr;
  size_t size_ = 0;
  std::mutex mutex_;
  std::condition_variable progress_;  // producer → readers: bytes arrived, or stopped
  std::condition_variable room_;      // readers → producer: bytes released, or asked for
  std::atomic<size_t> produced_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> released_any_{false};
  std::atomic<bool> abandoned_{false};  // the destructor runs: the producer stops early
  // Guarded by mutex_: the window, the released prefix (page-aligned, pages
  // dropped), and the most any reader has asked wait_for for.
  size_t window_ = 0;
  size_t keep_prefix_ = 0;
  size_t release_offset_ = 0;  // bytes before it will not be read again
  uintptr_t dropped_end_ = 0;  // address up to which pages were dropped
  size_t wanted_ = 0;
  bool windowed_ = false;        // set_window was called: pages may be dropped, reload() may follow
  bool source_dropped_ = false;  // the gzip bytes are gone: no page may be dropped
  bool clean_ = false;  // written by the producer before stopped_
  // Released units of kRecycleUnit bytes (aligned addresses) whose pages are
  // still resident, waiting for the producer to move them ahead of itself
  // (mremap): a 220 MB text then costs page faults for a window's worth of
  // pages, not for all of it. Units below backed_to_ were given pages or written.
  std::vector<uintptr_t> recycled_;
  uintptr_t backed_to_ = 0;
  bool recycling_ = true;  // off after a failed mremap (an old kernel), and once the producer stopped
  WindowStats window_stats_;
  bool step_windowed_ = false;  // the producer's current step began under a window
  std::thread thread_;
};

}  // namespace magpie
