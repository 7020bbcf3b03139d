#include "serve/sse_parser.hpp"

#include <cstring>

namespace magpie::serve {

void SseParser::feed(std::string_view bytes, Clock::time_point arrival,
                     std::vector<SseEvent>& out) {
  bytes_seen_ += bytes.size();
  // A UTF-8 BOM may open the stream, itself split across reads.
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";
  while (!bom_checked_ && !bytes.empty()) {
    if (bom_matched_ == 0) bom_time_ = arrival;
    if (bytes.front() == kBom[bom_matched_]) {
      bytes.remove_prefix(1);
      if (++bom_matched_ == kBom.size()) bom_checked_ = true;
      continue;
    }
    bom_checked_ = true;  // not a BOM: the bytes held back are content
    feed_content(kBom.substr(0, bom_matched_), bom_time_, out);
  }
  if (bom_checked_) feed_content(bytes, arrival, out);
}

void SseParser::feed_content(std::string_view bytes, Clock::time_point arrival,
                             std::vector<SseEvent>& out) {
  arrival_ = arrival;
  size_t pos = 0;
  if (skip_lf_ && !bytes.empty()) {
    if (bytes[0] == '\n') pos = 1;
    skip_lf_ = false;
  }
  while (pos < bytes.size()) {
    if (!line_started_) {
      line_started_ = true;
      line_start_ = arrival;
    }
    // Find the next line terminator; memchr twice beats a byte loop on long lines.
    const char* base = bytes.data() + pos;
    size_t rest = bytes.size() - pos;
    const void* lf = std::memchr(base, '\n', rest);
    size_t lf_at = lf ? static_cast<const char*>(lf) - base : rest;
    const void* cr = std::memchr(base, '\r', lf_at);
    size_t end = cr ? static_cast<const char*>(cr) - base : lf_at;
    if (end == rest) {  // no terminator yet: keep the fragment
      line_.append(base, rest);
      return;
    }
    std::string_view line;
    if (line_.empty()) {
      line = std::string_view(base, end);
    } else {
      line_.append(base, end);
      line = line_;
    }
    process_line(line, out);
    line_.clear();
    line_started_ = false;
    pos += end + 1;
    if (base[end] == '\r') {
      if (pos < bytes.size()) {
        if (bytes[pos] == '\n') ++pos;
      } else {
        skip_lf_ = true;
      }
    }
  }
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {  // blank line: dispatch
    if (has_data_) {
      if (!data_.empty() && data_.back() == '\n') data_.pop_back();
      out.push_back(SseEvent{std::move(data_), std::move(event_), event_start_, arrival_});
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive ping)
  std::string_view field = line, value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (!has_data_ && event_.empty()) event_start_ = line_start_;
    has_data_ = true;
    data_.append(value);
    data_.push_back('\n');
  } else if (field == "event") {
    if (!has_data_ && event_.empty()) event_start_ = line_start_;
    event_.assign(value);
  }
  // id, retry and unknown fields do not matter to a benchmark client.
}

}  // namespace magpie::serve
