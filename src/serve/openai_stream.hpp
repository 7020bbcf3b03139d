#pragma once
// Reads an OpenAI-compatible completion stream event by event and applies
// vLLM bench serve's timing rules (docs/REFERENCE_FACTS.md §5): a chunk counts
// when its `choices` is non-empty; the usage-only chunk and [DONE] do not.
// A mid-stream {"error": ...}, a non-JSON event, and a stream that ends
// without [DONE] are failures (vLLM's own client ignores the first).
#include <optional>
#include <string>
#include <vector>

#include "serve/request_record.hpp"
#include "serve/sse_parser.hpp"

namespace magpie::serve {

class OpenAiStreamReader {
 public:
  // Returns false once the stream is terminal ([DONE] or an error event).
  // May pad `event.data` in place (the JSON parser reads past the end).
  bool on_event(SseEvent& event);
  // After the transport finished cleanly: fills the outcome fields of `record`
  // (success/failure, ttft, itl, latency, tokens) relative to `start`.
  void finish(Clock::time_point start, bool parser_has_partial, RequestRecord& record) const;

  bool done() const { return done_; }
  // Keep the reply's text (a session's next turn sends it back as history).
  void keep_text() { keep_text_ = true; }
  std::string& text() { return text_; }
  const std::vector<Clock::time_point>& chunk_times() const { return chunk_times_; }

 private:
  std::vector<Clock::time_point> chunk_times_;
  std::vector<int32_t> chunk_tokens_;
  bool per_chunk_usage_ = true;  // every choice chunk carried usage (continuous usage stats)
  int64_t completion_tokens_ = -1, prompt_tokens_ = -1;
  size_t output_chars_ = 0;
  // Reasoning models: when the first reasoning and the first answer text came, and how much reasoning.
  std::optional<Clock::time_point> first_reasoning_, first_content_;
  int64_t reasoning_chunks_ = 0, reasoning_tokens_ = -1;
  bool keep_text_ = false;
  std::string text_;
  bool done_ = false;
  FailureReason failure_ = FailureReason::kNone;
  std::string error_;
};

}  // namespace magpie::serve
