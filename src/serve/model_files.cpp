#include "serve/model_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

namespace {

std::string home() {
  const char* h = std::getenv("HOME");
  return h ? h : "";
}

std::string expand_home(const std::string& p) { return p.starts_with("~/") ? home() + p.substr(1) : p; }

std::optional<int64_t> positive_int(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  auto v = it->get<int64_t>();
  return v > 0 ? std::optional(v) : std::nullopt;
}

}  // namespace

fs::path hf_hub_dir(const std::string& hf_cache_path) {
  if (!hf_cache_path.empty()) return fs::path(expand_home(hf_cache_path)) / "hub";
  if (const char* hub = std::getenv("HF_HUB_CACHE"); hub && *hub) return hub;
  if (const char* hf = std::getenv("HF_HOME"); hf && *hf) return fs::path(hf) / "hub";
  return fs::path(home()) / ".cache" / "huggingface" / "hub";
}

fs::path hf_repo_dir(const std::string& model, const std::string& hf_cache_path) {
  std::string name = "models--";
  for (char ch : model) {
    if (ch == '/')
      name += "--";
    else
      name.push_back(ch);
  }
  return hf_hub_dir(hf_cache_path) / name;
}

std::optional<fs::path> model_dir(const std::string& model, const std::string& hf_cache_path) {
  if (model.empty()) return std::nullopt;
  std::error_code ec;
  if (fs::is_directory(expand_home(model), ec)) return fs::path(expand_home(model));
  const fs::path repo = hf_repo_dir(model, hf_cache_path);
  if (!fs::is_directory(repo / "snapshots", ec)) return std::nullopt;
  std::ifstream ref(repo / "refs" / "main");
  std::string rev;
  if (ref && std::getline(ref, rev) && fs::is_regular_file(repo / "snapshots" / rev / "config.json", ec))
    return repo / "snapshots" / rev;
  // No refs/main (a revision-pinned download): one snapshot with a config.json is unambiguous.
  std::optional<fs::path> only;
  for (const auto& entry : fs::directory_iterator(repo / "snapshots", ec)) {
    if (!fs::is_regular_file(entry.path() / "config.json", ec)) continue;
    if (only) return std::nullopt;
    only = entry.path();
  }
  return only;
}

std::optional<ModelVocab> model_vocab(const std::string& model, const std::string& hf_cache_path) {
  auto dir = model_dir(model, hf_cache_path);
  if (!dir) return std::nullopt;
  const fs::path config = *dir / "config.json";
  std::ifstream in(config);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto size = positive_int(j, "vocab_size");
  // Multimodal configs keep the language model's under text_config.
  if (!size && j.contains("text_config") && j["text_config"].is_object())
    size = positive_int(j["text_config"], "vocab_size");
  if (!size) return std::nullopt;
  return ModelVocab{*size, config};
}

std::optional<ModelVocab> model_vocab_from_card(const nlohmann::json& card, const std::string& hf_cache_path) {
  if (!card.is_object()) return std::nullopt;
  for (const char* key : {"root", "id"}) {
    auto it = card.find(key);
    if (it == card.end() || !it->is_string()) continue;
    if (auto v = model_vocab(it->get<std::string>(), hf_cache_path)) return v;
  }
  return std::nullopt;
}

TokenIdRange fit_token_ids(ClientOptions& o, std::optional<int64_t> vocab_size, const std::string& from) {
  if (vocab_size && o.token_id_max > *vocab_size) {
    if (o.token_id_max_given)
      throw Error(ErrorKind::kUsage,
                  fmt::format("--token-id-max {} is above the model's vocab_size {} ({}): every request "
                              "would fail",
                              o.token_id_max, *vocab_size, from),
                  "", std::nullopt,
                  fmt::format("pass --token-id-max {} or less (client.token_id_max), or leave it out to "
                              "draw ids below the vocab size",
                              *vocab_size));
    o.token_id_max = static_cast<int32_t>(*vocab_size);
    // Ids low in a vocabulary are special tokens; a tiny vocabulary keeps its upper half.
    o.token_id_min = std::min<int32_t>(o.token_id_min, o.token_id_max / 2);
  }
  TokenIdRange t;
  t.min = o.token_id_min;
  t.max = o.token_id_max;
  t.vocab_size = vocab_size;
  t.vocab_from = vocab_size ? from : "";
  return t;
}

RevisionCheck check_model_revision(const std::string& model, const std::string& requested,
                                   const std::string& hf_cache_path) {
  RevisionCheck r;
  r.model = model;
  r.requested = requested;
  std::error_code ec;
  if (fs::is_directory(model, ec)) {
    r.status = "unverifiable";
    r.detail = "the model is a local folder, which has no hub revision; the engine was given --revision";
    return r;
  }
  const fs::path repo = hf_repo_dir(model, hf_cache_path);
  std::string commit = requested;
  if (std::ifstream ref(repo / "refs" / requested); ref) std::getline(ref, commit);
  std::string main;
  if (std::ifstream ref(repo / "refs" / "main"); ref) std::getline(ref, main);
  const fs::path snap = repo / "snapshots" / commit;
  if (!commit.empty() && fs::is_regular_file(snap / "config.json", ec)) {
    r.status = "match";
    r.commit = commit;
    r.snapshot_dir = snap;
    r.detail = fmt::format("the engine's files are the snapshot of {} ({})", requested, commit);
    return r;
  }
  r.status = "mismatch";
  r.detail = fmt::format(
      "revision {} of {} is not what the engine loaded: the Hugging Face cache {} holds no snapshot of it "
      "(refs/{} or snapshots/{} with a config.json){}; fix envs.MODEL_REVISION (a branch, tag or commit of "
      "the model) or fetch it (huggingface-cli download {} --revision {})",
      requested, model, repo.string(), requested, commit,
      main.empty() ? "" : fmt::format("; refs/main is {}", main), model, requested);
  return r;
}

nlohmann::json revision_receipt_json(const RevisionCheck& c) {
  return {{"model", c.model},
          {"requested_revision", c.requested},
          {"status", c.status},
          {"resolved_commit", c.commit.empty() ? nlohmann::json() : nlohmann::json(c.commit)},
          {"snapshot_dir", c.snapshot_dir.empty() ? nlohmann::json() : nlohmann::json(c.snapshot_dir.string())},
          {"detail", c.detail}};
}

}  // namespace magpie::serve
