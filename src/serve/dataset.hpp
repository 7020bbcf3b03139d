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
  // A pool of `prefix_pool` prefixes of prefix_len tokens (0: one, on every prompt): the
  // fraction `prefix_reuse` of prompts starts with one of them, the rest with prefix_len
  // tokens of their own, so every prompt is as long whatever the reuse.
  int64_t prefix_pool = 0;
  double prefix_reuse = 1.0;
  int32_t token_id_min = 100;    // avoid special tokens at the bottom of most vocabularies
  int32_t token_id_max = 30000;  // exclusive; keep below the model's vocab size
  uint64_t seed = 0;
};
std::vector<Prompt> random_dataset(const RandomDatasetOptions& options);

// Which pool prefix each of `count` prompts starts with (-1: a prefix of its own):
// exactly round(reuse·count) prompts, picked by a shuffle seeded with `seed`, take the
// pool's prefixes in turn, so each is used as evenly as the count allows.
std::vector<int64_t> assign_pool_prefixes(size_t count, int64_t pool, double reuse, uint64_t seed);

// The share of prompt tokens a prefix cache can serve when the prompts are sent one after
// another in order: every use of a pool prefix after its first (a prompt `warm` sent
// before them, e.g. the warm-up, counts as a first use). Exact when prefix_len is a
// multiple of the server's cache block (vLLM: 16 on GPU, 128 on CPU).
double expected_prefix_hit_rate(const std::vector<Prompt>& prompts, const std::vector<int64_t>& assignment,
                                int64_t prefix_len, std::optional<size_t> warm);

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
