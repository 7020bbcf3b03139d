#pragma once
// The multi-rank collective report: every NCCL/RCCL collective kernel of every
// rank, with its message size and group size (from the trace's collective
// arguments, else the c10d op that launched it), its time on each rank, and
// NCCL's algorithm and bus bandwidth; grouped per collective type and size,
// per rank, and matched across ranks to show the slowest rank and the skew.
// Formulas: docs/TRACELENS.md "Multi-rank collective report".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/gpu_timeline.hpp"
#include "report/table.hpp"
#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kSendRecv,  // send, recv, and NCCL's SendRecv kernels
  kAllToAll,
  kOther,
};
// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send_recv", "all_to_all",
// "other".
std::string_view to_string(CollectiveKind kind);
// From a "Collective name" ("allreduce", "_allgather_base", "_reduce_scatter_base", "send", ...),
// a c10d op ("c10d::alltoall_base_") or an NCCL kernel name
// ("ncclKernel_AllReduce_RING_LL_Sum_float").
std::optional<CollectiveKind> collective_kind_from_name(std::string_view name);
// NCCL's bus-bandwidth factor for `n` ranks: all_reduce 2(n-1)/n; all_gather,
// reduce_scatter and all_to_all (n-1)/n; broadcast, reduce and send/recv 1.
double bus_bandwidth_factor(CollectiveKind kind, int group_size);
// Bytes of one element of a PyTorch dtype as traces spell it ("Float",
// "BFloat16", "c10::Half", "unsigned char", "long int"); 0 when unknown.
int dtype_bytes(std::string_view dtype);

// One collective kernel on one rank.
struct CollectiveCall {
  int rank = 0;
  uint32_t row = 0;
  CollectiveKind kind = CollectiveKind::kOther;
  std::string kernel;
  std::string group;  // process group name; "" when not recorded
  std::string dtype;
  int64_t ts_ns = 0, dur_ns = 0;
  int64_t message_bytes = -1;  // the larger of input and output messages; -1 when unknown
  std::string size_source;     // "kernel args", "record_param_comms args", "c10d op shapes", ""
  int group_size = 0;          // 0 when unknown
  std::string group_size_source;
  size_t instance = 0;  // index among this rank's calls of the same (group, kind)
};

// A rank's communication on the timeline.
struct RankCommunication {
  int rank = 0;
  std::string trace_path;
  size_t collectives = 0;
  double communication_us = 0;          // union of the collective kernels
  double exposed_communication_us = 0;  // of that, not overlapped by computation
};

struct CollectiveCollection {
  std::vector<CollectiveCall> calls;
  std::vector<RankCommunication> ranks;
  std::vector<std::string> warnings;
};

// Adds one rank's collective kernels and timeline to `out`. Group size comes
// from the args, else the c10d op's output/input ratio, else the trace's
// distributedInfo world size, else (make_collective_report) the number of ranks.
void collect_collectives(const trace::Trace& trace, const trace::TraceLinks& links, int rank,
                         CollectiveCollection& out);

// One collective type and size (per rank, or across ranks).
struct CollectiveSizeRow {
  CollectiveKind kind = CollectiveKind::kOther;
  std::string dtype;
  int64_t message_bytes = -1;
  int group_size = 0;
  int rank = -1;  // -1 = across ranks
  size_t ranks = 0;
  size_t calls = 0;
  double total_us = 0, mean_us = 0, min_us = 0, max_us = 0;
  double algbw_gbps = 0, busbw_gbps = 0;  // at the mean time; 0 when the size is unknown
  // Across ranks, from calls matched by (group, kind, instance) on every rank:
  size_t matched_instances = 0;
  double transfer_us =
      0;  // mean over instances of the fastest rank's time (the one that waited least)
  double algbw_transfer_gbps = 0, busbw_transfer_gbps = 0;
  double wait_us = 0;        // mean over instances of (slowest - fastest) rank time
  double start_skew_us = 0;  // mean over instances of (last start - first start)
  int slowest_rank = -1;     // most total time in this row
  double slowest_rank_us = 0;
  int fastest_rank = -1;
  double fastest_rank_us = 0;
};

struct CollectiveReport {
  std::vector<CollectiveSizeRow> summary;   // across ranks, largest total time first
  std::vector<CollectiveSizeRow> per_rank;  // rank, then largest total time first
  std::vector<CollectiveCall> calls;
  std::vector<RankCommunication> ranks;
  std::vector<std::string> warnings;
};

CollectiveReport make_collective_report(CollectiveCollection collection);

// TraceLens-style sheets: collective_summary, collective_per_rank,
// collective_ranks, collective_calls.
std::vector<report::Table> collective_tables(const CollectiveReport& report);

}  // namespace magpie::analysis
