#include "serve/request_record.hpp"

namespace magpie::serve {

const char* to_string(FailureReason reason) {
  switch (reason) {
    case FailureReason::kNone:
      return "none";
    case FailureReason::kHttpStatus:
      return "http_status";
    case FailureReason::kStreamError:
      return "stream_error";
    case FailureReason::kIncompleteStream:
      return "incomplete_stream";
    case FailureReason::kMalformedSse:
      return "malformed_sse";
    case FailureReason::kNoChunks:
      return "no_chunks";
    case FailureReason::kTimeout:
      return "timeout";
    case FailureReason::kConnectFailed:
      return "connect_failed";
    case FailureReason::kTransport:
      return "transport";
    case FailureReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

nlohmann::json RequestRecord::to_json() const {
  nlohmann::json j{{"index", index},
                   {"success", success},
                   {"prompt_len", prompt_len},
                   {"expected_output_len", expected_output_len},
                   {"output_tokens", output_tokens},
                   {"output_chars", output_chars},
                   {"scheduled_s", scheduled_s},
                   {"start_s", start_s},
                   {"queue_s", queue_s},
                   {"client_overhead_s", overhead_s},
                   {"ttft_s", ttft},
                   {"e2el_s", latency},
                   {"itl_s", itl}};
  if (warmup) j["warmup"] = true;
  if (http_status) j["http_status"] = http_status;
  if (usage_prompt_tokens >= 0) j["usage_prompt_tokens"] = usage_prompt_tokens;
  if (!success) {
    j["failure"] = to_string(failure);
    j["error"] = error;
  }
  if (!chunk_tokens.empty()) j["chunk_tokens"] = chunk_tokens;
  return j;
}

}  // namespace magpie::serve
