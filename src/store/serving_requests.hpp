#pragma once
// The per-request records of a serving benchmark workspace, read back for the
// diff's bootstrap: requests.jsonl (Magpie's log, one line per request) or,
// failing that, the per-request arrays of benchmark_serving_result.json (vLLM's
// --save-detailed keys: ttfts, itls, output_lens, errors, latencies, start_times).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace magpie::store {

struct ServingRequest {
  bool success = false;
  double start_s = 0;  // since the run's start; meaningful only with has_timeline
  double ttft_s = 0;
  double e2el_s = 0;
  int64_t output_tokens = -1;  // -1: the server sent no usage
  std::vector<double> itl_s;
};

struct ServingCase {
  std::string label;  // "" for a single-case run, else the sweep case's label (c8_i1024_o128, ...)
  std::filesystem::path dir;
  std::string source;     // the file the records came from
  double duration_s = 0;  // the run's measured duration (the report's, else the last completion)
  bool has_timeline = false;  // start times known (else the duration must come from the report)
  std::vector<ServingRequest> requests;  // measured requests only (warm-ups dropped), failures kept
};

// One entry per case of benchmark_report.json's "cases" (sweep order), or one
// unlabelled case for a workspace without them. Throws Error(kNotFound) naming
// the workspace when no per-request records are found, kBadFormat for a
// malformed line (with its line number).
std::vector<ServingCase> load_serving_cases(const std::filesystem::path& workspace);

// Parsers, for tests and other callers with the text at hand.
std::vector<ServingRequest> parse_requests_jsonl(std::string_view text, const std::string& origin);
ServingCase parse_serving_result_json(std::string_view text, const std::string& origin);

}  // namespace magpie::store
