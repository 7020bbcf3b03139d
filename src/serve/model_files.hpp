#pragma once
// What a model's own files say, read without the network: its folder (a local
// path, or the Hugging Face cache's snapshot of a hub id) and the vocabulary
// size in its config.json. Random prompts draw token ids below it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/benchmark_config.hpp"

namespace magpie::serve {

// The Hugging Face hub cache: `hf_cache_path`/hub when given, else
// $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::filesystem::path hf_hub_dir(const std::string& hf_cache_path);

// A hub id's folder in that cache: hub/models--org--name.
std::filesystem::path hf_repo_dir(const std::string& model, const std::string& hf_cache_path);

// `model` as a folder: the path itself when it is a directory, else the cached
// snapshot of a hub id (refs/main, else the one snapshot with a config.json).
std::optional<std::filesystem::path> model_dir(const std::string& model, const std::string& hf_cache_path);

struct ModelVocab {
  int64_t size = 0;                    // config.json vocab_size (or text_config.vocab_size)
  std::filesystem::path config_path;   // where it was read
};
std::optional<ModelVocab> model_vocab(const std::string& model, const std::string& hf_cache_path);

// The same from a server's model card (/v1/models data[i]): vLLM's `root` is
// the path or id it was started with, `id` the served name; each is tried.
std::optional<ModelVocab> model_vocab_from_card(const nlohmann::json& card, const std::string& hf_cache_path);

// Random prompts' token ids, [min, max), and the vocab size bounding them
// with the config.json it came from, when one was found (the report's config.token_ids).
struct TokenIdRange {
  int32_t min = 0, max = 0;
  std::optional<int64_t> vocab_size;
  std::string vocab_from;
};

// Random token ids fitted to the model's vocabulary (`vocab_size`, read from `from`):
// a default bound above it is lowered to it; a bound the user gave above it is
// refused (Error kUsage), as every request would fail.
TokenIdRange fit_token_ids(ClientOptions& client, std::optional<int64_t> vocab_size, const std::string& from);

// envs.MODEL_REVISION checked against what the engine loaded: the Hugging
// Face cache's snapshot for that revision (refs/<revision> -> commit, or the
// commit itself under snapshots/). A local folder has no hub revision to check.
struct RevisionCheck {
  std::string model, requested;
  std::string status;  // match | mismatch | unverifiable
  std::string commit;  // the commit the revision resolved to ("" when it did not)
  std::filesystem::path snapshot_dir;
  std::string detail;  // why, in words, with the fix on a mismatch
};
RevisionCheck check_model_revision(const std::string& model, const std::string& requested,
                                   const std::string& hf_cache_path);
nlohmann::json revision_receipt_json(const RevisionCheck& check);  // model_revision_receipt.json

}  // namespace magpie::serve
