#include "serve/recorded_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_map>

#include "core/error.hpp"

namespace magpie::serve {

namespace {

constexpr const char* kLineFix =
    "each line is one JSON object: {\"timestamp\": ms, \"input_length\": N, \"output_length\": N, "
    "\"hash_ids\": [ids]}";

int64_t count_field(const nlohmann::json& j, const char* key, bool positive, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end())
    throw Error(ErrorKind::kBadFormat, fmt::format("trace line has no \"{}\"", key), where, std::nullopt,
                kLineFix);
  if (!it->is_number_integer() || it->get<int64_t>() < (positive ? 1 : 0))
    throw Error(ErrorKind::kBadFormat,
                fmt::format("\"{}\" must be {} integer, got {}", key, positive ? "a positive" : "a non-negative",
                            it->dump()),
                where, std::nullopt, kLineFix);
  return it->get<int64_t>();
}

}  // namespace

std::vector<TraceRequest> read_mooncake_trace(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::kNotFound, "cannot open the trace", path.string());
  std::vector<TraceRequest> out;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto where = fmt::format("{}:{}", path.string(), line_no);
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error(ErrorKind::kBadFormat, "trace line is not a JSON object", where, std::nullopt, kLineFix);
    TraceRequest r;
    auto ts = j.find("timestamp");
    if (ts == j.end())
      throw Error(ErrorKind::kBadFormat, "trace line has no \"timestamp\"", where, std::nullopt, kLineFix);
    if (!ts->is_number() || !std::isfinite(ts->get<double>()) || ts->get<double>() < 0)
      throw Error(ErrorKind::kBadFormat,
                  fmt::format("\"timestamp\" must be milliseconds (a number >= 0), got {}", ts->dump()), where,
                  std::nullopt, kLineFix);
    r.timestamp_ms = ts->get<double>();
    r.input_length = count_field(j, "input_length", true, where);
    r.output_length = count_field(j, "output_length", true, where);
    if (auto h = j.find("hash_ids"); h != j.end()) {
      if (!h->is_array())
        throw Error(ErrorKind::kBadFormat, "\"hash_ids\" must be a list of integers", where, std::nullopt,
                    kLineFix);
      for (const auto& id : *h) {
        if (!id.is_number_integer())
          throw Error(ErrorKind::kBadFormat, fmt::format("\"hash_ids\" holds {}, not an integer", id.dump()),
                      where, std::nullopt, kLineFix);
        r.hash_ids.push_back(id.get<int64_t>());
      }
    } else {
      throw Error(ErrorKind::kBadFormat, "trace line has no \"hash_ids\"", where, std::nullopt, kLineFix);
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) throw Error(ErrorKind::kBadFormat, "the trace has no requests", path.string());
  return out;
}

TraceReplay mooncake_replay(std::vector<TraceRequest> requests, const TraceReplayOptions& o) {
  if (!(o.speedup > 0) || std::isinf(o.speedup))
    throw Error(ErrorKind::kUsage, fmt::format("trace speed-up must be above 0, got {}", o.speedup));
  if (o.token_id_max <= o.token_id_min) throw Error(ErrorKind::kUsage, "token id range is empty");
  std::stable_sort(requests.begin(), requests.end(),
                   [](const TraceRequest& a, const TraceRequest& b) { return a.timestamp_ms < b.timestamp_ms; });
  if (o.max_requests != 0 && requests.size() > o.max_requests) requests.resize(o.max_requests);
  std::uniform_int_distribution<int32_t> id_dist(o.token_id_min, o.token_id_max - 1);
  // One block per hash id, drawn from a generator seeded by the id: the same
  // id is the same tokens wherever it appears.
  std::unordered_map<int64_t, std::vector<int32_t>> blocks;
  auto block = [&](int64_t id) -> const std::vector<int32_t>& {
    auto [it, fresh] = blocks.try_emplace(id);
    if (fresh) {
      std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(id) + 1);
      it->second.resize(static_cast<size_t>(o.block_size));
      for (auto& t : it->second) t = id_dist(rng);
    }
    return it->second;
  };
  TraceReplay out;
  const double t0 = requests.empty() ? 0 : requests.front().timestamp_ms;
  std::mt19937_64 tail_rng(o.seed ^ 0xA5A5A5A5ULL);
  for (const auto& r : requests) {
    Prompt p;
    p.token_ids.reserve(static_cast<size_t>(r.input_length));
    for (int64_t id : r.hash_ids) {
      const auto& b = block(id);
      size_t room = static_cast<size_t>(r.input_length) - p.token_ids.size();
      p.token_ids.insert(p.token_ids.end(), b.begin(), b.begin() + static_cast<ptrdiff_t>(std::min(room, b.size())));
      if (p.token_ids.size() >= static_cast<size_t>(r.input_length)) break;
    }
    // Tokens past the recorded blocks belong to this request alone.
    while (p.token_ids.size() < static_cast<size_t>(r.input_length)) p.token_ids.push_back(id_dist(tail_rng));
    p.prompt_len = r.input_length;
    p.output_len = o.output_len ? *o.output_len : r.output_length;
    out.prompts.push_back(std::move(p));
    out.offsets_s.push_back((r.timestamp_ms - t0) / 1000.0 / o.speedup);
  }
  return out;
}

}  // namespace magpie::serve
