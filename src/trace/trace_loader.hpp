#pragma once
// Finding trace files and loading one whatever its format.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "trace/kineto_reader.hpp"
#include "trace/rank_discovery.hpp"
#include "trace/trace.hpp"

namespace magpie::trace {

// Reads `path` (gzip or not), detects Kineto JSON / rocprofv3 JSON / rocprofv3
// kernel-trace CSV by content, and parses it. Sets the rank when the trace
// says (distributedInfo); leaves -1 otherwise (rank_discovery.hpp decides).
Trace load_trace(const std::filesystem::path& path, const IngestOptions& options);

// load_trace, then a merged multi-rank trace split into one trace per rank
// (merged_trace.hpp); one trace for an ordinary file.
std::vector<Trace> load_trace_ranks(const std::filesystem::path& path, const IngestOptions& options);

// Magpie's discovery order (docs/MAGPIE_COMPATIBILITY.md §5): `*-rank-*.pt.trace.json.gz`, then
// `*-rank-*.pt.trace.json`, else every *.json / *.json.gz (plus rocprofv3
// *_kernel_trace.csv) in name order. Uses DIR/torch_trace when it exists.
// Throws Error(kNotFound) for a missing directory or one without traces.
std::vector<std::filesystem::path> discover_trace_files(const std::filesystem::path& dir);

}  // namespace magpie::trace
