#pragma once
// Incremental text/event-stream parser (WHATWG "server-sent events").
// No line-length limit (aiohttp's 128 KiB line cap breaks long outputs); lines
// may end in \n, \r\n or \r, and any frame may be split or coalesced across
// reads. Each event carries the arrival time of its first byte, which is what
// latency metrics are measured against.
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::serve {

using Clock = std::chrono::steady_clock;

struct SseEvent {
  std::string data;   // data lines joined by '\n' (the trailing '\n' removed)
  std::string event;  // the `event:` field, empty when absent
  Clock::time_point first_byte;
  Clock::time_point complete;  // arrival of the read that completed the event
};

class SseParser {
 public:
  // Parses `bytes` that arrived at `arrival`; appends every event completed
  // by them to `out`. Comment lines (":ping") and unknown fields are skipped.
  void feed(std::string_view bytes, Clock::time_point arrival, std::vector<SseEvent>& out);

  // True when bytes of an unfinished event (or line) are pending: at end of
  // stream that means the server closed mid-event.
  bool has_partial() const {
    return !line_.empty() || has_data_ || !event_.empty() || (!bom_checked_ && bom_matched_ > 0);
  }

  // Bytes consumed so far, for error messages.
  size_t bytes_seen() const { return bytes_seen_; }

 private:
  void feed_content(std::string_view bytes, Clock::time_point arrival, std::vector<SseEvent>& out);
  void process_line(std::string_view line, std::vector<SseEvent>& out);

  std::string line_;                // an unterminated line carried to the next feed
  Clock::time_point line_start_{};  // arrival of the first byte of the current line
  bool line_started_ = false;
  bool skip_lf_ = false;  // last feed ended in '\r': a leading '\n' belongs to it
  bool bom_checked_ = false;
  size_t bom_matched_ = 0;
  Clock::time_point bom_time_{};
  std::string data_;
  std::string event_;
  bool has_data_ = false;
  Clock::time_point event_start_{};
  Clock::time_point arrival_{};
  size_t bytes_seen_ = 0;
};

}  // namespace magpie::serve
