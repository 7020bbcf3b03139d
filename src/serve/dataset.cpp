#include "serve/dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::serve {

namespace {

void shuffle_and_cut(std::vector<Prompt>& prompts, const FileDatasetOptions& options) {
  if (options.seed != 0) {
    std::mt19937_64 rng(options.seed);
    std::shuffle(prompts.begin(), prompts.end(), rng);
  }
  if (options.num_prompts != 0 && prompts.size() > options.num_prompts)
    prompts.resize(options.num_prompts);
  if (options.output_len)
    for (auto& p : prompts) p.output_len = *options.output_len;
}

}  // namespace

int64_t estimate_text_tokens(const std::string& text) {
  // ~4 characters per token for English BPE vocabularies; only a default.
  return std::max<int64_t>(1, static_cast<int64_t>(text.size() / 4));
}

std::vector<Prompt> random_dataset(const RandomDatasetOptions& o) {
  if (o.input_len < 1 || o.output_len < 1)
    throw Error(ErrorKind::kUsage, "input and output lengths must be at least 1");
  if (o.range_ratio < 0 || o.range_ratio >= 1)
    throw Error(ErrorKind::kUsage,
                fmt::format("range ratio must be in [0, 1), got {}", o.range_ratio));
  if (o.token_id_max <= o.token_id_min) throw Error(ErrorKind::kUsage, "token id range is empty");
  std::mt19937_64 rng(o.seed);
  auto lo_hi = [&](int64_t len) {
    auto lo = static_cast<int64_t>(static_cast<double>(len) * (1 - o.range_ratio));
    auto hi = static_cast<int64_t>(static_cast<double>(len) * (1 + o.range_ratio));
    return std::uniform_int_distribution<int64_t>(std::max<int64_t>(1, lo),
                                                  std::max<int64_t>(1, hi));
  };
  auto in_dist = lo_hi(o.input_len);
  auto out_dist = lo_hi(o.output_len);
  std::uniform_int_distribution<int32_t> id_dist(o.token_id_min, o.token_id_max - 1);
  // The pool is drawn first, so a single prefix (no pool) is the same tokens as it always was.
  std::vector<std::vector<int32_t>> pool(static_cast<size_t>(std::max<int64_t>(1, o.prefix_pool)),
                                         std::vector<int32_t>(static_cast<size_t>(o.prefix_len)));
  for (auto& prefix : pool)
    for (auto& t : prefix) t = id_dist(rng);
  std::vector<int64_t> assignment(o.num_prompts, 0);
  if (o.prefix_pool > 0) assignment = assign_pool_prefixes(o.num_prompts, o.prefix_pool, o.prefix_reuse, o.seed);
  // Prefixes of a prompt's own come from a generator of their own, so the prompts'
  // lengths and suffixes do not depend on the reuse.
  std::mt19937_64 own_rng(o.seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<Prompt> prompts(o.num_prompts);
  int32_t span = o.token_id_max - o.token_id_min;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto& p = prompts[i];
    int64_t n = in_dist(rng);
    if (assignment[i] >= 0) {
      p.token_ids = pool[static_cast<size_t>(assignment[i])];
    } else {
      p.token_ids.resize(static_cast<size_t>(o.prefix_len));
      for (auto& t : p.token_ids) t = id_dist(own_rng);
    }
    p.token_ids.reserve(p.token_ids.size() + static_cast<size_t>(n));
    // Consecutive ids from a random offset, as vLLM does: cheap and never
    // repeats a short cycle that a prefix cache could exploit.
    int32_t offset = id_dist(rng) - o.token_id_min;
    for (int64_t k = 0; k < n; ++k)
      p.token_ids.push_back(o.token_id_min + static_cast<int32_t>((offset + k) % span));
    p.prompt_len = static_cast<int64_t>(p.token_ids.size());
    p.output_len = out_dist(rng);
  }
  return prompts;
}

std::vector<int64_t> assign_pool_prefixes(size_t count, int64_t pool, double reuse, uint64_t seed) {
  if (pool < 1) throw Error(ErrorKind::kUsage, fmt::format("prefix pool must hold at least 1 prefix, got {}", pool));
  if (!(reuse >= 0 && reuse <= 1))
    throw Error(ErrorKind::kUsage, fmt::format("prefix reuse must be in [0, 1], got {}", reuse));
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = i;
  std::mt19937_64 rng(seed + 0x5bd1e995ULL);
  std::shuffle(order.begin(), order.end(), rng);
  auto reusing = static_cast<size_t>(std::llround(reuse * static_cast<double>(count)));
  std::vector<int64_t> assignment(count, -1);
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(reusing));
  for (size_t k = 0; k < reusing; ++k) assignment[order[k]] = static_cast<int64_t>(k) % pool;
  return assignment;
}

double expected_prefix_hit_rate(const std::vector<Prompt>& prompts, const std::vector<int64_t>& assignment,
                                int64_t prefix_len, std::optional<size_t> warm) {
  std::set<int64_t> seen;
  if (warm && *warm < assignment.size() && assignment[*warm] >= 0) seen.insert(assignment[*warm]);
  double hits = 0, tokens = 0;
  for (size_t i = 0; i < prompts.size() && i < assignment.size(); ++i) {
    tokens += static_cast<double>(prompts[i].prompt_len);
    if (assignment[i] >= 0 && !seen.insert(assignment[i]).second) hits += static_cast<double>(prefix_len);
  }
  return tokens > 0 ? hits / tokens : 0.0;
}

std::vector<Prompt> sharegpt_dataset(const std::filesystem::path& path,
                                     const FileDatasetOptions& options) {
  auto buffer = read_file(path);
  auto j = nlohmann::json::parse(buffer.view(), nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw Error(ErrorKind::kBadFormat, "ShareGPT dataset must be a JSON list of conversations",
                path.string());
  std::vector<Prompt> prompts;
  for (const auto& entry : j) {
    auto c = entry.find("conversations");
    if (c == entry.end() || !c->is_array() || c->size() < 2) continue;
    const auto& q = (*c)[0];
    const auto& a = (*c)[1];
    if (!q.contains("value") || !a.contains("value") || !q["value"].is_string() ||
        !a["value"].is_string())
      continue;
    Prompt p;
    p.text = q["value"].get<std::string>();
    p.prompt_len = estimate_text_tokens(p.text);
    p.output_len = estimate_text_tokens(a["value"].get_ref<const std::string&>());
    // vLLM drops very short and very long pairs; so do we (by estimate).
    if (p.prompt_len < 4 || p.output_len < 4 || p.prompt_len > 1024 ||
        p.prompt_len + p.output_len > 2048)
      continue;
    prompts.push_back(std::move(p));
  }
  shuffle_and_cut(prompts, options);
  if (prompts.empty())
    throw Error(ErrorKind::kBadFormat, "no usable conversations in ShareGPT dataset",
                path.string());
  return prompts;
}

std::vector<JsonlRecord> read_jsonl_records(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::kNotFound, "cannot open JSONL dataset", path.string());
  std::vector<JsonlRecord> records;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    auto where = fmt::format("{}:{}", path.string(), line_no);
    if (j.is_discarded() || !j.is_object())
      throw Error(ErrorKind::kBadFormat, "JSONL line is not a JSON object", where);
    JsonlRecord r;
    r.line = line_no;
    Prompt& p = r.prompt;
    if (auto ids = j.find("prompt_token_ids"); ids != j.end() && ids->is_array()) {
      for (const auto& id : *ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          throw Error(ErrorKind::kBadFormat,
                      fmt::format("\"prompt_token_ids\" holds {}, not a token id", id.dump()), where);
        p.token_ids.push_back(id.get<int32_t>());
      }
      p.prompt_len = static_cast<int64_t>(p.token_ids.size());
    } else if (auto t = j.find("prompt"); t != j.end() && t->is_string()) {
      p.text = t->get<std::string>();
      p.prompt_len = estimate_text_tokens(p.text);
    } else {
      throw Error(ErrorKind::kBadFormat, "JSONL line needs \"prompt\" or \"prompt_token_ids\"",
                  where);
    }
    p.output_len = 256;
    for (const char* key : {"max_tokens", "output_len"}) {  // output_len wins
      auto n = j.find(key);
      if (n == j.end()) continue;
      if (!n->is_number_integer() || n->get<int64_t>() < 1)
        throw Error(ErrorKind::kBadFormat, fmt::format("\"{}\" must be a positive integer, got {}", key, n->dump()),
                    where);
      p.output_len = n->get<int64_t>();
    }
    if (auto ts = j.find("timestamp"); ts != j.end()) {
      if (!ts->is_number() || ts->get<double>() < 0 || !std::isfinite(ts->get<double>()))
        throw Error(ErrorKind::kBadFormat,
                    fmt::format("\"timestamp\" must be milliseconds (a number >= 0), got {}", ts->dump()), where);
      r.timestamp_ms = ts->get<double>();
    }
    records.push_back(std::move(r));
  }
  if (records.empty()) throw Error(ErrorKind::kBadFormat, "JSONL dataset is empty", path.string());
  return records;
}

std::vector<Prompt> jsonl_dataset(const std::filesystem::path& path,
                                  const FileDatasetOptions& options) {
  std::vector<Prompt> prompts;
  for (auto& r : read_jsonl_records(path)) prompts.push_back(std::move(r.prompt));
  shuffle_and_cut(prompts, options);
  return prompts;
}

}  // namespace magpie::serve
