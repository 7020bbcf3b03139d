#include "serve/openai_stream.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <utility>

namespace magpie::serve {

namespace {

namespace sj = simdjson::ondemand;

// What one event says, read with simdjson On-Demand: the client parses every
// chunk of every stream, and a DOM parse per chunk was most of its CPU time.
struct EventFacts {
  bool has_choice = false;
  size_t text_chars = 0;
  std::string* text = nullptr;  // the reply's text is kept here when set (sessions)
  bool has_error = false;
  std::string error;
  int64_t completion_tokens = -1, prompt_tokens = -1, reasoning_tokens = -1;
  bool reasoning = false, content = false;  // the chunk carries reasoning text, answer text
};

size_t string_length(sj::value v, std::string* keep) {
  std::string_view s;
  if (v.get_string().get(s)) return 0;
  if (keep) keep->append(s);
  return s.size();
}

bool read_choice(sj::value v, EventFacts& f) {
  sj::object c;
  if (v.get_object().get(c)) return true;  // not an object: counts, carries no text
  for (auto field_result : c) {
    sj::field field;
    if (std::move(field_result).get(field)) return false;
    std::string_view key;
    if (field.unescaped_key().get(key)) return false;
    if (key == "text") {
      const size_t n = string_length(field.value(), f.text);
      f.text_chars += n;
      f.content |= n > 0;
    } else if (key == "delta") {
      sj::object d;
      if (field.value().get_object().get(d)) continue;
      for (auto dr : d) {
        sj::field df;
        if (std::move(dr).get(df)) return false;
        std::string_view dk;
        if (df.unescaped_key().get(dk)) return false;
        // The reply a session's next turn sends back is its content, not its reasoning.
        if (dk == "content") {
          const size_t n = string_length(df.value(), f.text);
          f.text_chars += n;
          f.content |= n > 0;
        } else if (dk == "reasoning" || dk == "reasoning_content") {
          const size_t n = string_length(df.value(), nullptr);
          f.text_chars += n;
          f.reasoning |= n > 0;
        }
      }
    }
  }
  return true;
}

// False when the event is not a well-formed JSON object.
bool read_event(std::string& data, EventFacts& f) {
  thread_local sj::parser parser;
  data.reserve(data.size() + simdjson::SIMDJSON_PADDING);
  simdjson::padded_string_view view(data.data(), data.size(), data.capacity());
  sj::document doc;
  if (parser.iterate(view).get(doc)) return false;
  sj::object obj;
  if (doc.get_object().get(obj)) return false;
  for (auto field_result : obj) {
    sj::field field;
    if (std::move(field_result).get(field)) return false;
    std::string_view key;
    if (field.unescaped_key().get(key)) return false;
    sj::value v = field.value();
    if (key == "error") {
      if (v.is_null()) continue;
      f.has_error = true;
      sj::object eo;
      std::string_view msg;
      if (!v.get_object().get(eo)) {
        if (!eo.find_field_unordered("message").get_string().get(msg))
          f.error = std::string(msg);
        else
          f.error = "error event";
      } else if (!v.get_string().get(msg)) {
        f.error = std::string(msg);
      } else {
        f.error = "error event";
      }
    } else if (key == "usage") {
      sj::object u;
      if (v.get_object().get(u)) continue;  // "usage": null
      for (auto ur : u) {
        sj::field uf;
        if (std::move(ur).get(uf)) return false;
        std::string_view uk;
        if (uf.unescaped_key().get(uk)) return false;
        int64_t n = 0;
        if (uk == "completion_tokens" && !uf.value().get_int64().get(n))
          f.completion_tokens = n;
        else if (uk == "prompt_tokens" && !uf.value().get_int64().get(n))
          f.prompt_tokens = n;
        else if (uk == "completion_tokens_details") {
          sj::object d;
          if (uf.value().get_object().get(d)) continue;  // null
          if (!d.find_field_unordered("reasoning_tokens").get_int64().get(n)) f.reasoning_tokens = n;
        }
      }
    } else if (key == "choices") {
      sj::array a;
      if (v.get_array().get(a)) continue;
      for (auto el : a) {
        sj::value ev;
        if (std::move(el).get(ev)) return false;
        f.has_choice = true;
        if (!read_choice(ev, f)) return false;
        break;  // choices[0] only, as vLLM's client reads it
      }
    }
  }
  return true;
}

}  // namespace

bool OpenAiStreamReader::on_event(SseEvent& event) {
  if (done_) return false;
  if (event.data == "[DONE]") {
    done_ = true;
    return false;
  }
  EventFacts f;
  if (keep_text_) f.text = &text_;
  std::string shown = event.data.substr(0, 200);
  if (!read_event(event.data, f)) {
    failure_ = FailureReason::kMalformedSse;
    error_ = fmt::format("event data is not a JSON object: {}", shown);
    done_ = true;
    return false;
  }
  if (f.has_error) {
    failure_ = FailureReason::kStreamError;
    error_ = std::move(f.error);
    done_ = true;
    return false;
  }
  if (f.completion_tokens >= 0) completion_tokens_ = f.completion_tokens;
  if (f.prompt_tokens >= 0) prompt_tokens_ = f.prompt_tokens;
  if (f.reasoning_tokens >= 0) reasoning_tokens_ = f.reasoning_tokens;
  if (f.reasoning) {
    ++reasoning_chunks_;
    if (!first_reasoning_) first_reasoning_ = event.first_byte;
  }
  if (f.content && !first_content_) first_content_ = event.first_byte;
  if (f.has_choice) {
    chunk_times_.push_back(event.first_byte);
    output_chars_ += f.text_chars;
    if (f.completion_tokens >= 0) {
      chunk_tokens_.push_back(static_cast<int32_t>(f.completion_tokens));
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
  record.reasoning_chunks = reasoning_chunks_;
  record.reasoning_tokens = reasoning_tokens_;
  if (first_reasoning_) record.first_reasoning_s = secs(*first_reasoning_ - start).count();
  if (first_content_) record.first_content_s = secs(*first_content_ - start).count();
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
