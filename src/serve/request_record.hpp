#pragma once
// One request's measured life, kept compact: generated text is not stored
// (only its length), so a long run's memory is its latency arrays.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace magpie::serve {

enum class FailureReason : uint8_t {
  kNone,
  kHttpStatus,        // non-200 response
  kStreamError,       // a mid-stream {"error": ...} event (arrives with HTTP 200)
  kIncompleteStream,  // the server closed the stream without [DONE]
  kMalformedSse,      // an event whose data is not JSON
  kNoChunks,          // [DONE] without any choice-bearing chunk (no TTFT)
  kTimeout,
  kConnectFailed,
  kTransport,  // reset / broken pipe mid-exchange
  kCancelled,  // Ctrl-C or shutdown
};
const char* to_string(FailureReason reason);

struct RequestRecord {
  uint64_t index = 0;
  bool warmup = false;
  int64_t session = -1;  // session workloads: which session, and its turn (0-based)
  int32_t turn = -1;
  int64_t parent_session = -1;  // a sub-agent's parent session (dataset agentic_coding)
  bool success = false;
  FailureReason failure = FailureReason::kNone;
  std::string error;
  int http_status = 0;
  int64_t prompt_len = 0;  // tokens sent (exact for token-id prompts)
  int64_t expected_output_len = 0;
  int64_t output_tokens = -1;  // usage.completion_tokens, -1 when the server sent none
  int64_t usage_prompt_tokens = -1;
  size_t output_chars = 0;
  // All in seconds, as vLLM stores them.
  double scheduled_s = 0;  // planned send time since the run's start
  double start_s = 0;      // just before the POST (vLLM's `st`)
  double queue_s = 0;      // waiting for a concurrency slot
  double overhead_s = 0;   // start - scheduled - queue: the client's own lateness
  double ttft = 0;
  double latency = 0;                 // E2EL: last choice-bearing chunk - start
  // Reasoning models (delta.reasoning_content / delta.reasoning): seconds from
  // start to the first reasoning text and to the first answer text (-1: none
  // came); chunks carrying reasoning, and usage's reasoning_tokens (-1: not sent).
  double first_reasoning_s = -1, first_content_s = -1;
  int64_t reasoning_chunks = 0, reasoning_tokens = -1;
  std::vector<double> itl;            // per chunk
  std::vector<int32_t> chunk_tokens;  // per chunk when the server reports usage per chunk

  nlohmann::json to_json() const;
};

// A failed request in one line, in the server's own words where it sent some
// (an {"error": {"message": ...}} body or event), with the fix when it is known.
std::string failure_line(const RequestRecord& record);

}  // namespace magpie::serve
