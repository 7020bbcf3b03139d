#pragma once
// Traces that hold several ranks in one file. Trace-merging tools (TraceLens'
// TraceFuse; its sibling scripts) put every rank's events in one file, offset
// each rank's pids and name the processes "RANK n - CPU" / "RANK n - GPU".
// Analysed as one trace, that is one timeline over every GPU of the job; each
// rank is split out instead and analysed as the rank it was.
#include <optional>
#include <vector>

#include "trace/trace.hpp"

namespace magpie::trace {

// The rank a merged trace's process name gives ("RANK 3 - GPU" → 3).
std::optional<int> rank_from_process_name(std::string_view process_name);

// One trace per rank of a merged trace, each with rank (source kProcessName),
// the events of that rank's processes, their flows and names, and the same
// path. Events of processes without a "RANK n" name are left out, with a
// warning. A trace naming one rank only gets that rank in place; a trace that
// is not merged is returned as it is. Either way the result is never empty.
std::vector<Trace> split_merged_trace(Trace&& trace);

}  // namespace magpie::trace
