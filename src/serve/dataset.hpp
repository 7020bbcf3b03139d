#pragma once
// Prompts to send. Random prompts are token-id lists, so input lengths are
// exact without a tokenizer (the server accepts `prompt: [ids]`). ShareGPT
// and JSONL prompts are text; their input length comes from the server's
// usage.prompt_tokens.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace magpie::serve {

// One message of a conversation, as the chat API takes it.
struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

struct Prompt {
  std::vector<int32_t> token_ids;  // used when non-empty
  std::string text;
  std::vector<ChatMessage> messages;  // a session turn's history: the chat API sends these
  int64_t prompt_len = 0;  // tokens; an estimate for text prompts until usage arrives
  int64_t output_len = 0;  // max_tokens
};

// A text's length in tokens without a tokenizer: ~4 characters a token (English BPE), at least 1.
int64_t estimate_text_tokens(const std::string& text);

struct RandomDatasetOptions {
  size_t num_prompts = 0;
  int64_t input_len = 1024, output_len = 512;
  double range_ratio = 0.0;      // lengths uniform in [len·(1−r), len·(1+r)], as vLLM
  int64_t prefix_len = 0;        // shared prefix tokens prepended to every prompt
  int32_t token_id_min = 100;    // avoid special tokens at the bottom of most vocabularies
  int32_t token_id_max = 30000;  // exclusive; keep below the model's vocab size
  uint64_t seed = 0;
};
std::vector<Prompt> random_dataset(const RandomDatasetOptions& options);

struct FileDatasetOptions {
  size_t num_prompts = 0;             // 0 = all
  std::optional<int64_t> output_len;  // overrides per-record lengths
  uint64_t seed = 0;                  // shuffle seed; 0 keeps file order
};
// ShareGPT: a JSON list of {"conversations": [{"from": "human"|"gpt", "value": ...}, ...]};
// the first human turn is the prompt and the reply's length (chars/4) the output length.
std::vector<Prompt> sharegpt_dataset(const std::filesystem::path& path,
                                     const FileDatasetOptions& options);
// JSONL: one object a line with "prompt" (text) or "prompt_token_ids", and optional
// "output_len" / "max_tokens" (default 256) and "timestamp" (ms, for a replay).
// A bad line is Error(kBadFormat) naming FILE:LINE.
struct JsonlRecord {
  Prompt prompt;
  std::optional<double> timestamp_ms;
  size_t line = 0;
};
std::vector<JsonlRecord> read_jsonl_records(const std::filesystem::path& path);
std::vector<Prompt> jsonl_dataset(const std::filesystem::path& path,
                                  const FileDatasetOptions& options);

}  // namespace magpie::serve
