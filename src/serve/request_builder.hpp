#pragma once
// JSON bodies for the two OpenAI-compatible streaming endpoints.
#include <string>

#include "serve/dataset.hpp"

namespace magpie::serve {

enum class ApiKind { kCompletions, kChat };

struct RequestOptions {
  ApiKind api = ApiKind::kCompletions;
  std::string model;
  bool ignore_eos = true;  // fixed output lengths, as Magpie's client runs
  double temperature = 0.0;
  bool continuous_usage = false;  // usage in every chunk → per-token ITL
};

std::string endpoint_path(ApiKind api);  // "/v1/completions" or "/v1/chat/completions"
std::string build_request_body(const Prompt& prompt, const RequestOptions& options);

}  // namespace magpie::serve
