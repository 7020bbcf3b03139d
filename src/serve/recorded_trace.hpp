#pragma once
// Recorded traffic: a Mooncake-format JSONL trace, one request a line —
//   {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}
// timestamp in milliseconds; each hash id names a 512-token block of the
// prompt, and the same id is the same block in every request, so the prefix
// reuse of the recorded traffic is reproduced. Replayed on a fixed schedule:
// each request is due at (timestamp - first timestamp) / speedup.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "serve/dataset.hpp"

namespace magpie::serve {

struct TraceRequest {
  double timestamp_ms = 0;
  int64_t input_length = 0, output_length = 0;
  std::vector<int64_t> hash_ids;
};

// Throws Error(kBadFormat) naming FILE:LINE for a line that is not a JSON
// object, or lacks a field or has one of the wrong type; kNotFound when the
// file cannot be opened. Blank lines are skipped.
std::vector<TraceRequest> read_mooncake_trace(const std::filesystem::path& path);

struct TraceReplayOptions {
  int64_t block_size = 512;  // tokens per hash id (Mooncake's)
  int32_t token_id_min = 100, token_id_max = 30000;
  uint64_t seed = 0;
  double speedup = 1.0;               // > 1 replays faster
  std::optional<int64_t> output_len;  // overrides each request's output_length
  size_t max_requests = 0;            // 0 = all, else the first N by time
};

struct TraceReplay {
  std::vector<Prompt> prompts;   // token-id prompts, in send order
  std::vector<double> offsets_s;  // when each is due, from the run's start
};
TraceReplay mooncake_replay(std::vector<TraceRequest> requests, const TraceReplayOptions& options);

}  // namespace magpie::serve
