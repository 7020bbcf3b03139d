#pragma once
// Which rank (and which profiling cycle of it) each trace of a folder is: one
// rule for gap analysis, both tracelens modes and the MCP tools
// (docs/TRACELENS.md "Ranks, cycles and kinds of trace").
//
// 1. The rank comes from the trace (distributedInfo.rank; a merged trace's
//    "RANK n - …" process name), else from the file name (rank_from_file_name),
//    else by file order, with a warning naming the file (never silently).
// 2. Files without a rank that share a worker name (the file name without the
//    profiler's timestamp) are one process: they get one rank between them.
// 3. Several traces of one rank are profiling cycles of it when they share the
//    worker name, come from one host process (when the traces say) and do not
//    overlap in time; cycles are numbered by start time. Anything else with a
//    duplicate rank is an Error(kUsage) naming both files.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.hpp"

namespace magpie::trace {

// What one trace says about who wrote it and when.
struct TraceOrigin {
  std::string file;  // the path, as reported
  int rank = -1;     // from the trace itself (distributedInfo, merged process name); -1 = none
  RankSource source = RankSource::kOrder;
  int world_size = 0;
  std::string worker;     // worker_name(file name)
  int64_t host_pid = -1;  // the process whose CPU events it holds; -1 = unknown
  int64_t begin_ns = 0, end_ns = 0;  // on the profiler's clock; begin == end = unknown
};

// The decision for one origin (same index as the input).
struct RankAssignment {
  int rank = 0;
  RankSource source = RankSource::kOrder;
  int cycle = 0;   // index among the cycles of this rank, by start time
  int cycles = 1;  // cycles of this rank (1 = none)
};

struct RankPlan {
  std::vector<RankAssignment> assignments;  // parallel to the origins
  std::vector<std::string> warnings;        // one per rank given by file order, one per cycled rank
  std::vector<int> ranks;                   // distinct ranks, ascending
  bool has_cycles() const;
  // Index of the trace that stands for `rank`: its last cycle (warm, after the
  // first cycles' warm-up); nullopt when no trace has that rank.
  std::optional<size_t> representative(int rank) const;
};

// "-rank-3.", "rank3", "rank_3", "rank-3", "worker3", "worker_3", "-TP-3" (SGLang)
// anywhere in the file name.
std::optional<int> rank_from_file_name(std::string_view file_name);

// The file name without the trace suffix and without the profiler's
// timestamps (runs of 9+ digits, "Jul_15_10_52_41"), which are the only part
// that differs between the cycles of one process:
// "worker0.1700000000123.pt.trace.json.gz" → "worker0.*".
std::string worker_name(std::string_view file_name);

// From a loaded trace: its rank (if the trace says), host pid and time span.
TraceOrigin origin_of(const Trace& trace);

// From the first bytes of a file (current Kineto writes distributedInfo before
// the event array): cheap, for choosing a folder's rank 0 without loading
// every trace. A file whose event array comes first (older writers put the
// other keys after it) is loaded whole. Throws Error for a file that cannot
// be opened (or, loaded whole, read).
TraceOrigin peek_origin(const std::filesystem::path& path);

// Applies the rules above. `origins` in file-name order. Throws Error(kUsage)
// naming both files for a duplicate rank that is not a cycle.
RankPlan plan_ranks(const std::vector<TraceOrigin>& origins);

// Writes a plan's rank, source and cycle into the traces (same order).
void apply_rank_plan(const RankPlan& plan, const std::vector<Trace*>& traces);

// "rank 0" or "rank 0 cycle 1/2" for messages; "rank0" / "rank0_cycle1" for file names.
std::string rank_label(int rank, int cycle, int cycles);
std::string rank_file_label(int rank, int cycle, int cycles);

}  // namespace magpie::trace
