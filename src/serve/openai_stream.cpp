#include "serve/openai_stream.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace magpie::serve {

namespace {

size_t text_length(const nlohmann::json& choice) {
  size_t n = 0;
  auto add = [&](const char* key, const nlohmann::json& obj) {
    if (auto it = obj.find(key); it != obj.end() && it->is_string()) n += it->get_ref<const std::string&>().size();
  };
  add("text", choice);  // /v1/completions
  if (auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
    add("content", *d);  // /v1/chat/completions
    add("reasoning", *d);
    add("reasoning_content", *d);
  }
  return n;
}

}  // namespace

bool OpenAiStreamReader::on_event(const SseEvent& event) {
  if (done_) return false;
  if (event.data == "[DONE]") {
    done_ = true;
    return false;
  }
  auto j = nlohmann::json::parse(event.data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    failure_ = FailureReason::kMalformedSse;
    error_ = fmt::format("event data is not a JSON object: {:.200}", event.data);
    done_ = true;
    return false;
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    failure_ = FailureReason::kStreamError;
    const auto& msg = e->is_object() && e->contains("message") ? (*e)["message"] : *e;
    error_ = msg.is_string() ? msg.get<std::string>() : msg.dump();
    done_ = true;
    return false;
  }
  const nlohmann::json* usage = nullptr;
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    usage = &*u;
    if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer())
      completion_tokens_ = c->get<int64_t>();
    if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer())
      prompt_tokens_ = p->get<int64_t>();
  }
  if (auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    chunk_times_.push_back(event.first_byte);
    output_chars_ += text_length(c->front());
    if (usage && completion_tokens_ >= 0) {
      chunk_tokens_.push_back(static_cast<int32_t>(completion_tokens_));
    } else {
      per_chunk_usage_ = false;
    }
  }
  return true;
}

void OpenAiStreamReader::finish(Clock::time_point start, bool parser_has_partial,
                                RequestRecord& record) const {
  using secs = std::chrono::duration<double>;
  record.output_tokens = completion_tokens_;
  record.usage_prompt_tokens = prompt_tokens_;
  record.output_chars = output_chars_;
  if (!chunk_times_.empty()) {
    record.ttft = secs(chunk_times_.front() - start).count();
    record.latency = secs(chunk_times_.back() - start).count();
    record.itl.reserve(chunk_times_.size() - 1);
    for (size_t i = 1; i < chunk_times_.size(); ++i)
      record.itl.push_back(secs(chunk_times_[i] - chunk_times_[i - 1]).count());
    if (per_chunk_usage_ && !chunk_tokens_.empty()) {
      // Cumulative counts → tokens carried by each chunk.
      record.chunk_tokens.resize(chunk_tokens_.size());
      int32_t prev = 0;
      for (size_t i = 0; i < chunk_tokens_.size(); ++i) {
        record.chunk_tokens[i] = chunk_tokens_[i] - prev;
        prev = chunk_tokens_[i];
      }
    }
  }
  if (failure_ != FailureReason::kNone) {
    record.success = false;
    record.failure = failure_;
    record.error = error_;
  } else if (!done_) {
    record.success = false;
    record.failure = FailureReason::kIncompleteStream;
    record.error = parser_has_partial ? "stream closed mid-event without [DONE]"
                                      : "stream closed without [DONE]";
  } else if (chunk_times_.empty()) {
    record.success = false;
    record.failure = FailureReason::kNoChunks;
    record.error = "Never received a valid chunk to calculate TTFT.";
  } else {
    record.success = true;
  }
}

}  // namespace magpie::serve
