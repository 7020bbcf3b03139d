#pragma once
// One ingested trace file: its events as columns, plus what the file says
// about the machine and the run.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trace/event_table.hpp"

namespace magpie::trace {

enum class TraceFormat : uint8_t { kKineto, kRocprofJson, kRocprofCsv };
const char* to_string(TraceFormat f);

// Where the rank number came from, in order of trust (docs/TRACELENS.md
// "Ranks, cycles and kinds of trace"): the trace's distributedInfo, a merged
// trace's "RANK n - …" process name, the file name, the file order.
enum class RankSource : uint8_t { kTrace, kProcessName, kFileName, kOrder };
const char* to_string(RankSource s);

struct DeviceInfo {
  int id = -1;
  std::string name;  // empty on some ROCm traces: identify by the fields below
  int compute_major = -1;
  int compute_minor = -1;
  int num_sms = 0;
  int warp_size = 0;
  int64_t total_global_mem = 0;
};

struct FlowEvent {
  int64_t id = 0;
  int64_t ts_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  Phase phase = Phase::kFlowStart;
};

struct IngestStats {
  size_t raw_bytes = 0;          // after decompression
  size_t file_bytes = 0;         // on disk
  size_t events_seen = 0;        // every element of traceEvents
  size_t events_kept = 0;        // rows in the table
  size_t python_function_skipped = 0;
  size_t metadata_events = 0;
  size_t malformed_events = 0;   // elements that were not objects or lacked ts
  size_t non_object_events = 0;  // of those, elements that were not objects at all
  size_t invalid_utf8_chunks = 0;
};

struct TraceLinks;  // trace/trace_links.hpp

struct Trace {
  std::string path;
  TraceFormat format = TraceFormat::kKineto;
  int rank = -1;
  RankSource rank_source = RankSource::kOrder;
  // Profiling cycles of one rank (several files of one process): this trace's
  // index among them, by start time, and how many there are (1 = no cycles).
  int cycle = 0;
  int cycles = 1;
  int world_size = 0;
  int64_t base_time_ns = 0;

  StringPool strings;
  EventTable events;
  std::vector<FlowEvent> flows;
  std::vector<DeviceInfo> devices;
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;

  IngestStats stats;
  std::vector<std::string> warnings;
  // Launch → GPU work and op-tree links, built once: by the ingest (load_trace),
  // or on first use (links_of) for a trace made another way. Analyses read them
  // through links_of and never rebuild them.
  mutable std::shared_ptr<const TraceLinks> links;

  std::string_view str(StringId id) const { return strings.view(id); }
  std::string_view name(size_t row) const { return strings.view(events.name[row]); }
  // A pid/tid column value as the trace wrote it ("12", "-549452224", "Spans").
  std::string thread_key_text(int64_t key) const {
    return key >= 0 ? std::to_string(key) : std::string(strings.view(static_cast<StringId>(-1 - key)));
  }
};

}  // namespace magpie::trace
