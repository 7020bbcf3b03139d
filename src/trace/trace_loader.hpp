#pragma once
// Finding trace files and loading one whatever its format.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "trace/kineto_reader.hpp"
#include "trace/trace.hpp"

namespace magpie::trace {

// Reads `path` (gzip or not), detects Kineto JSON / rocprofv3 JSON / rocprofv3
// kernel-trace CSV by content, and parses it. Sets the rank from the trace,
// else from the file name; leaves -1 otherwise (assign_ranks decides).
Trace load_trace(const std::filesystem::path& path, const IngestOptions& options);

// "-rank-3.", "rank3", "rank_3", "rank-3" anywhere in the file name.
std::optional<int> rank_from_file_name(std::string_view file_name);

// Magpie's discovery order (docs/MAGPIE_COMPATIBILITY.md §5): `*-rank-*.pt.trace.json.gz`, then
// `*-rank-*.pt.trace.json`, else every *.json / *.json.gz (plus rocprofv3
// *_kernel_trace.csv) in name order. Uses DIR/torch_trace when it exists.
// Throws Error(kNotFound) for a missing directory or one without traces.
std::vector<std::filesystem::path> discover_trace_files(const std::filesystem::path& dir);

// Gives traces without a rank one by file order, avoiding ranks already taken,
// and returns a warning per trace so ranked.
std::vector<std::string> assign_ranks(std::vector<Trace*>& traces);

}  // namespace magpie::trace
