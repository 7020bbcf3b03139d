#include "serve/request_builder.hpp"

#include <nlohmann/json.hpp>

namespace magpie::serve {

std::string endpoint_path(ApiKind api) {
  return api == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string build_request_body(const Prompt& prompt, const RequestOptions& o) {
  nlohmann::json body{{"model", o.model}, {"stream", true}, {"temperature", o.temperature}};
  nlohmann::json stream_options{{"include_usage", true}};
  if (o.continuous_usage) stream_options["continuous_usage_stats"] = true;
  body["stream_options"] = std::move(stream_options);
  if (o.ignore_eos) body["ignore_eos"] = true;
  if (o.api == ApiKind::kCompletions) {
    if (!prompt.token_ids.empty()) {
      body["prompt"] = prompt.token_ids;
    } else {
      body["prompt"] = prompt.text;
    }
    body["max_tokens"] = prompt.output_len;
  } else {
    if (!prompt.messages.empty()) {  // a session turn: the whole history
      auto& messages = body["messages"] = nlohmann::json::array();
      for (const auto& m : prompt.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
      body["max_completion_tokens"] = prompt.output_len;
      return body.dump();
    }
    // Chat takes text only; a token-id prompt is sent as space-joined ids,
    // which keeps its length close without a tokenizer.
    std::string text = prompt.text;
    if (text.empty()) {
      for (size_t i = 0; i < prompt.token_ids.size(); ++i) {
        if (i) text.push_back(' ');
        text += std::to_string(prompt.token_ids[i]);
      }
    }
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
    body["max_completion_tokens"] = prompt.output_len;
  }
  return body.dump();
}

}  // namespace magpie::serve
