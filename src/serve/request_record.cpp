#include "serve/request_record.hpp"

#include <cctype>

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
  if (session >= 0) {
    j["session"] = session;
    j["turn"] = turn;
    if (parent_session >= 0) j["parent_session"] = parent_session;
  }
  if (http_status) j["http_status"] = http_status;
  if (usage_prompt_tokens >= 0) j["usage_prompt_tokens"] = usage_prompt_tokens;
  if (reasoning_chunks > 0 || reasoning_tokens >= 0) {
    j["reasoning_chunks"] = reasoning_chunks;
    if (reasoning_tokens >= 0) j["reasoning_tokens"] = reasoning_tokens;
    if (first_reasoning_s >= 0) j["first_reasoning_s"] = first_reasoning_s;
    if (first_content_s >= 0) j["first_output_s"] = first_content_s;
  }
  if (!success) {
    j["failure"] = to_string(failure);
    j["error"] = error;
  }
  if (!chunk_tokens.empty()) j["chunk_tokens"] = chunk_tokens;
  return j;
}

std::string failure_line(const RequestRecord& r) {
  std::string msg = r.error.empty() ? to_string(r.failure) : r.error;
  // An HTTP error carries its body ("HTTP 400: {...}"): vLLM's and SGLang's
  // {"error": {"message": ...}}, OpenAI's {"message": ...}, FastAPI's {"detail": ...}.
  if (auto brace = msg.find('{'); brace != std::string::npos) {
    auto j = nlohmann::json::parse(msg.substr(brace), nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      const nlohmann::json* said = nullptr;
      if (auto e = j.find("error"); e != j.end() && e->is_object() && e->contains("message"))
        said = &(*e)["message"];
      else if (auto m = j.find("message"); m != j.end())
        said = &*m;
      else if (auto d = j.find("detail"); d != j.end())
        said = &*d;
      if (said && said->is_string()) msg = msg.substr(0, brace) + said->get<std::string>();
    }
  }
  std::string line;
  for (char ch : msg) {
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    if (ch == ' ' && !line.empty() && line.back() == ' ') continue;
    line.push_back(ch);
  }
  if (line.size() > 300) line = line.substr(0, 297) + "...";
  std::string lower = line;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower.find("vocab") != std::string::npos)
    line += " — random token ids must exist in the model's vocabulary: pass --token-id-max N "
            "(client.token_id_max) with N at most the vocab_size in the model's config.json";
  return line;
}

}  // namespace magpie::serve
