#include "analysis/collective_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/perf_model.hpp"
#include "sources/kernel_name.hpp"

namespace magpie::analysis {

namespace {

using trace::Category;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// NCCL/RCCL by name, and every kernel the name classifier calls communication
// (DeepEP, NVSHMEM, MSCCL++, custom all-reduce): their time is communication
// on the timeline even where no size is known.
bool is_comm_kernel_name(std::string_view name) {
  const std::string n = lower(name.substr(0, 64));
  return contains(n, "nccl") || contains(n, "rccl") ||
         sources::parse_kernel_name(name).category == sources::KernelCategory::kCommunication;
}

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// Bytes per second over a time in us, as GB/s (1e9 bytes, NCCL's unit).
double gbps(int64_t bytes, double time_us) {
  if (bytes <= 0 || time_us <= 0) return 0;
  return static_cast<double>(bytes) / (time_us * 1e-6) / 1e9;
}

struct SizeFromShapes {
  int64_t bytes = -1;
  int64_t small = -1;  // the smaller of the first two tensors, for a group-size ratio
};

// The first two tensors of an op's Input Dims/Input type: c10d ops take
// (output, input) or (tensors); the message is the larger one.
SizeFromShapes size_from_shapes(const trace::Trace& t, uint32_t op_row) {
  SizeFromShapes out;
  const uint32_t d = t.events.detail[op_row];
  if (d == trace::kNoDetail || d >= t.events.op_details.size()) return out;
  const auto& od = t.events.op_details[d];
  const auto& dims = od.args.dims;
  const std::vector<std::string>& types = od.args.types;
  if (!dims) return out;
  std::vector<int64_t> tensors;
  for (size_t i = 0; i < dims->size() && tensors.size() < 2; ++i) {
    if ((*dims)[i].empty() || i >= types.size()) continue;
    const int eb = dtype_bytes(types[i]);
    if (eb == 0) continue;
    int64_t n = 1;
    for (int64_t x : (*dims)[i]) n *= std::max<int64_t>(x, 0);
    tensors.push_back(n * eb);
  }
  if (tensors.empty()) return out;
  out.bytes = *std::max_element(tensors.begin(), tensors.end());
  if (tensors.size() == 2) out.small = *std::min_element(tensors.begin(), tensors.end());
  return out;
}

void fill_from_args(const trace::Trace& t, const trace::CollectiveArgs& a, CollectiveCall& c,
                    const char* source) {
  if (c.dtype.empty()) c.dtype = std::string(t.str(a.dtype));
  if (c.group.empty()) c.group = std::string(t.str(a.group));
  if (c.message_bytes < 0) {
    const int eb = dtype_bytes(t.str(a.dtype));
    const int64_t n = std::max(a.in_nelems, a.out_nelems);
    if (eb > 0 && n >= 0) {
      c.message_bytes = n * eb;
      c.size_source = source;
    }
  }
  if (c.group_size == 0 && a.group_size > 0) {
    c.group_size = a.group_size;
    c.group_size_source = source;
  }
}

}  // namespace

std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kSendRecv:
      return "send_recv";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kOther:
      break;
  }
  return "other";
}

std::optional<CollectiveKind> collective_kind_from_name(std::string_view name) {
  std::string n = lower(name);
  std::erase(n, '_');
  // Most specific first: "reducescatter" before "reduce", "allreduce" before "reduce".
  if (contains(n, "allreduce")) return CollectiveKind::kAllReduce;
  if (contains(n, "reducescatter")) return CollectiveKind::kReduceScatter;
  if (contains(n, "allgather")) return CollectiveKind::kAllGather;
  if (contains(n, "alltoall")) return CollectiveKind::kAllToAll;
  if (contains(n, "broadcast")) return CollectiveKind::kBroadcast;
  if (contains(n, "sendrecv") || n == "send" || n == "recv" || contains(n, "c10d::send") ||
      contains(n, "c10d::recv") || contains(n, "ncclkernelsend") || contains(n, "ncclkernelrecv") ||
      contains(n, "ncclkernel_send") || contains(n, "ncclkernel_recv") ||
      contains(n, "ncclkernelsendrecv"))
    return CollectiveKind::kSendRecv;
  if (contains(n, "reduce")) return CollectiveKind::kReduce;
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveKind kind, int n) {
  if (n <= 0) return 0;
  const double nd = n;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (nd - 1) / nd;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (nd - 1) / nd;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kSendRecv:
      return 1.0;
    case CollectiveKind::kOther:
      break;
  }
  return 0;
}

int dtype_bytes(std::string_view dtype) {
  std::string d = lower(dtype);
  if (d.starts_with("c10::")) d = d.substr(5);
  static const std::map<std::string, int, std::less<>> kBytes = {{"float", 4},
                                                                 {"float32", 4},
                                                                 {"double", 8},
                                                                 {"float64", 8},
                                                                 {"half", 2},
                                                                 {"float16", 2},
                                                                 {"bfloat16", 2},
                                                                 {"int", 4},
                                                                 {"int32", 4},
                                                                 {"long", 8},
                                                                 {"long int", 8},
                                                                 {"int64", 8},
                                                                 {"long long", 8},
                                                                 {"short", 2},
                                                                 {"int16", 2},
                                                                 {"char", 1},
                                                                 {"signed char", 1},
                                                                 {"unsigned char", 1},
                                                                 {"byte", 1},
                                                                 {"uint8", 1},
                                                                 {"int8", 1},
                                                                 {"bool", 1},
                                                                 {"float8_e4m3fn", 1},
                                                                 {"float8_e5m2", 1},
                                                                 {"float8_e4m3fnuz", 1},
                                                                 {"float8_e5m2fnuz", 1}};
  auto it = kBytes.find(d);
  return it == kBytes.end() ? 0 : it->second;
}

void collect_collectives(const trace::Trace& t, const trace::TraceLinks& links, int rank,
                         CollectiveCollection& out) {
  const auto& e = t.events;
  std::vector<Interval> compute, comm, copies;
  RankCommunication rc;
  rc.rank = rank;
  rc.trace_path = t.path;
  std::map<std::pair<std::string, CollectiveKind>, size_t> seen;
  std::vector<CollectiveCall> calls;
  // Kernel names repeat: classify each distinct name once (parsing a C++
  // signature per kernel call was a third of `tracelens --mode pytorch`).
  std::unordered_map<trace::StringId, bool> comm_name;
  auto is_comm_name = [&](trace::StringId id) {
    auto [it, fresh] = comm_name.try_emplace(id, false);
    if (fresh) it->second = is_comm_kernel_name(t.str(id));
    return it->second;
  };
  for (uint32_t r = 0; r < e.size(); ++r) {
    const Category cat = e.category[r];
    if (!trace::is_gpu_activity(cat)) continue;
    const Interval iv{e.ts_ns[r], e.end_ns(r)};
    if (cat != Category::kKernel) {
      copies.push_back(iv);
      continue;
    }
    const trace::CollectiveArgs* args = e.collective_of(r);
    const std::string_view name = t.name(r);
    if (!args && !is_comm_name(e.name[r])) {
      compute.push_back(iv);
      continue;
    }
    comm.push_back(iv);
    CollectiveCall c;
    c.rank = rank;
    c.row = r;
    c.kernel = std::string(name);
    c.ts_ns = e.ts_ns[r];
    c.dur_ns = e.dur_ns[r];
    std::optional<CollectiveKind> kind;
    if (args) {
      kind = collective_kind_from_name(t.str(args->name));
      fill_from_args(t, *args, c, "kernel args");
    }
    // The launching op chain: record_param_comms (args on Kineto ≥ 2.1) inside
    // the c10d op (shapes with record_shapes) that names the collective.
    int32_t op = trace::launching_op(t, links, r);
    SizeFromShapes
        comms_shapes;  // record_param_comms' first tensor: used when no c10d op has shapes
    for (int depth = 0; op >= 0 && depth < 8; ++depth, op = links.parent[static_cast<size_t>(op)]) {
      const auto row = static_cast<uint32_t>(op);
      if (e.category[row] != Category::kCpuOp) continue;
      const std::string_view op_name = t.name(row);
      if (const trace::CollectiveArgs* a = e.collective_of(row)) {
        if (!kind) kind = collective_kind_from_name(t.str(a->name));
        fill_from_args(t, *a, c, "record_param_comms args");
      }
      if (op_name.starts_with("c10d::")) {
        if (!kind) kind = collective_kind_from_name(op_name);
        SizeFromShapes s = size_from_shapes(t, row);
        if (c.message_bytes < 0 && s.bytes > 0) {
          c.message_bytes = s.bytes;
          c.size_source = "c10d op shapes";
        }
        const bool ratio_kind =
            kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter;
        if (c.group_size == 0 && ratio_kind && s.small > 0 && s.bytes % s.small == 0) {
          c.group_size = static_cast<int>(s.bytes / s.small);
          c.group_size_source = "output/input size of the c10d op";
        }
        break;
      }
      if (op_name == "record_param_comms" && comms_shapes.bytes < 0)
        comms_shapes = size_from_shapes(t, row);
    }
    if (c.message_bytes < 0 && comms_shapes.bytes > 0) {
      c.message_bytes = comms_shapes.bytes;
      c.size_source = "record_param_comms shapes";
    }
    if (!kind) kind = collective_kind_from_name(name);
    c.kind = kind.value_or(CollectiveKind::kOther);
    if (c.group_size == 0 && t.world_size > 0) {
      c.group_size = t.world_size;
      c.group_size_source = "distributedInfo world_size";
    }
    calls.push_back(std::move(c));
  }
  std::stable_sort(
      calls.begin(), calls.end(),
      [](const CollectiveCall& a, const CollectiveCall& b) { return a.ts_ns < b.ts_ns; });
  for (auto& c : calls) c.instance = seen[{c.group, c.kind}]++;
  const GpuTimeline tl = compute_gpu_timeline(compute, comm, copies);
  merge_intervals(comm);
  int64_t comm_ns = 0;
  for (const auto& [a, b] : comm) comm_ns += b - a;
  rc.collectives = calls.size();
  rc.communication_us = us(comm_ns);
  rc.exposed_communication_us = tl.exposed_communication_us;
  out.ranks.push_back(rc);
  for (auto& c : calls) out.calls.push_back(std::move(c));
}

namespace {

using SizeKey =
    std::tuple<CollectiveKind, std::string, int64_t, int>;  // kind, dtype, bytes, group size

SizeKey size_key(const CollectiveCall& c) {
  return {c.kind, c.dtype, c.message_bytes, c.group_size};
}

void fill_times(CollectiveSizeRow& row, const std::vector<const CollectiveCall*>& calls) {
  row.calls = calls.size();
  row.min_us = calls.empty() ? 0 : us(calls.front()->dur_ns);
  for (const auto* c : calls) {
    const double d = us(c->dur_ns);
    row.total_us += d;
    row.min_us = std::min(row.min_us, d);
    row.max_us = std::max(row.max_us, d);
  }
  row.mean_us = row.calls ? row.total_us / static_cast<double>(row.calls) : 0;
  row.algbw_gbps = gbps(row.message_bytes, row.mean_us);
  row.busbw_gbps = row.algbw_gbps * bus_bandwidth_factor(row.kind, row.group_size);
}

}  // namespace

CollectiveReport make_collective_report(CollectiveCollection in) {
  CollectiveReport rep;
  rep.warnings = std::move(in.warnings);
  std::set<int> ranks;
  for (const auto& r : in.ranks) ranks.insert(r.rank);
  // Group size of last resort: the number of rank traces.
  size_t unknown_size = 0, unknown_group = 0;
  for (auto& c : in.calls) {
    if (c.group_size == 0 && ranks.size() > 1) {
      c.group_size = static_cast<int>(ranks.size());
      c.group_size_source = "number of rank traces";
    }
    unknown_size += c.message_bytes < 0;
    unknown_group += c.group_size == 0;
  }
  if (unknown_size > 0) {
    rep.warnings.push_back(fmt::format(
        "{} collective kernel(s) have no message size: neither the kernel nor its op carries "
        "\"In msg nelems\"/\"Out msg nelems\"/dtype, and the c10d op has no shapes (record with "
        "record_shapes=True, PyTorch ≥ 2.1); their bandwidth is left empty",
        unknown_size));
  }
  if (unknown_group > 0) {
    rep.warnings.push_back(fmt::format(
        "{} collective kernel(s) have no group size (no \"Group size\" arg, no distributedInfo); "
        "their bus bandwidth is left empty",
        unknown_group));
  }

  // Per rank.
  std::map<std::pair<int, SizeKey>, std::vector<const CollectiveCall*>> by_rank;
  std::map<SizeKey, std::vector<const CollectiveCall*>> by_size;
  for (const auto& c : in.calls) {
    by_rank[{c.rank, size_key(c)}].push_back(&c);
    by_size[size_key(c)].push_back(&c);
  }
  for (const auto& [key, calls] : by_rank) {
    CollectiveSizeRow row;
    std::tie(row.kind, row.dtype, row.message_bytes, row.group_size) = key.second;
    row.rank = key.first;
    row.ranks = 1;
    fill_times(row, calls);
    rep.per_rank.push_back(std::move(row));
  }
  std::stable_sort(rep.per_rank.begin(), rep.per_rank.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.total_us > b.total_us;
  });

  // Instances across ranks: the i-th call of (group, kind) on each rank is one
  // collective, when every rank that has the kind made the same number of calls.
  std::map<std::pair<std::string, CollectiveKind>, std::map<int, size_t>> counts;
  for (const auto& c : in.calls) ++counts[{c.group, c.kind}][c.rank];
  std::map<std::tuple<std::string, CollectiveKind, size_t>, std::vector<const CollectiveCall*>>
      instances;
  for (const auto& c : in.calls) {
    const auto& per = counts[{c.group, c.kind}];
    bool even = per.size() > 1;
    for (const auto& [rank, n] : per) even = even && n == per.begin()->second;
    if (even) instances[{c.group, c.kind, c.instance}].push_back(&c);
  }
  for (const auto& [gk, per] : counts) {
    if (per.size() < 2) continue;
    size_t lo = SIZE_MAX, hi = 0;
    for (const auto& [rank, n] : per) lo = std::min(lo, n), hi = std::max(hi, n);
    if (lo != hi) {
      rep.warnings.push_back(fmt::format(
          "{}{}: ranks made {}..{} calls, so calls are not matched across ranks (transfer time, "
          "wait "
          "and skew left empty); were all ranks profiled over the same steps?",
          to_string(gk.second), gk.first.empty() ? "" : " (group " + gk.first + ")", lo, hi));
    }
  }

  for (const auto& [key, calls] : by_size) {
    CollectiveSizeRow row;
    std::tie(row.kind, row.dtype, row.message_bytes, row.group_size) = key;
    std::map<int, double> rank_total;
    for (const auto* c : calls) rank_total[c->rank] += us(c->dur_ns);
    row.ranks = rank_total.size();
    fill_times(row, calls);
    for (const auto& [rank, total] : rank_total) {
      if (row.slowest_rank < 0 || total > row.slowest_rank_us)
        row.slowest_rank = rank, row.slowest_rank_us = total;
      if (row.fastest_rank < 0 || total < row.fastest_rank_us)
        row.fastest_rank = rank, row.fastest_rank_us = total;
    }
    // Matched instances whose calls all fall in this row.
    double transfer = 0, wait = 0, skew = 0;
    std::set<std::tuple<std::string, CollectiveKind, size_t>> done;
    for (const auto* c : calls) {
      auto ik = std::make_tuple(c->group, c->kind, c->instance);
      auto it = instances.find(ik);
      if (it == instances.end() || !done.insert(ik).second) continue;
      const auto& members = it->second;
      // An init-capture: clang 14 (the fuzz preset) cannot capture a structured binding.
      if (members.size() < 2 || !std::all_of(members.begin(), members.end(),
                                             [&row_key = key](const auto* m) { return size_key(*m) == row_key; }))
        continue;
      int64_t dmin = INT64_MAX, dmax = 0, smin = INT64_MAX, smax = INT64_MIN;
      for (const auto* m : members) {
        dmin = std::min(dmin, m->dur_ns), dmax = std::max(dmax, m->dur_ns);
        smin = std::min(smin, m->ts_ns), smax = std::max(smax, m->ts_ns);
      }
      ++row.matched_instances;
      transfer += us(dmin);
      wait += us(dmax - dmin);
      skew += us(smax - smin);
    }
    if (row.matched_instances > 0) {
      const auto n = static_cast<double>(row.matched_instances);
      row.transfer_us = transfer / n;
      row.wait_us = wait / n;
      row.start_skew_us = skew / n;
      row.algbw_transfer_gbps = gbps(row.message_bytes, row.transfer_us);
      row.busbw_transfer_gbps =
          row.algbw_transfer_gbps * bus_bandwidth_factor(row.kind, row.group_size);
    }
    rep.summary.push_back(std::move(row));
  }
  std::stable_sort(rep.summary.begin(), rep.summary.end(),
                   [](const auto& a, const auto& b) { return a.total_us > b.total_us; });
  rep.calls = std::move(in.calls);
  rep.ranks = std::move(in.ranks);
  return rep;
}

namespace {

report::Cell opt_num(double v, bool known) { return known ? report::Cell{v} : report::Cell{}; }
report::Cell opt_int(int64_t v) { return v >= 0 ? report::Cell{v} : report::Cell{}; }

std::vector<report::Cell> size_cells(const CollectiveSizeRow& r) {
  const bool sized = r.message_bytes > 0;
  const bool bus = sized && r.group_size > 0;
  return {std::string(to_string(r.kind)),
          r.dtype,
          opt_int(r.message_bytes),
          sized ? report::Cell{static_cast<double>(r.message_bytes) / (1024.0 * 1024.0)}
                : report::Cell{},
          r.group_size > 0 ? report::Cell{static_cast<int64_t>(r.group_size)} : report::Cell{},
          static_cast<int64_t>(r.calls),
          r.total_us,
          r.mean_us,
          r.min_us,
          r.max_us,
          opt_num(r.algbw_gbps, sized),
          opt_num(r.busbw_gbps, bus)};
}

}  // namespace

std::vector<report::Table> collective_tables(const CollectiveReport& rep) {
  const std::vector<std::string> size_cols = {
      "collective",    "dtype",        "message_bytes", "message_MB",  "group_size", "calls",
      "total_time_us", "mean_time_us", "min_time_us",   "max_time_us", "algbw_GBps", "busbw_GBps"};
  report::Table summary{"collective_summary", {}, {}};
  summary.columns = size_cols;
  for (const char* c : {"ranks", "matched_instances", "transfer_time_us", "algbw_transfer_GBps",
                        "busbw_transfer_GBps", "wait_us", "start_skew_us", "slowest_rank",
                        "slowest_rank_time_us", "fastest_rank", "fastest_rank_time_us"})
    summary.columns.emplace_back(c);
  for (const auto& r : rep.summary) {
    auto cells = size_cells(r);
    const bool matched = r.matched_instances > 0;
    const bool sized = r.message_bytes > 0;
    cells.insert(cells.end(),
                 {static_cast<int64_t>(r.ranks), static_cast<int64_t>(r.matched_instances),
                  opt_num(r.transfer_us, matched), opt_num(r.algbw_transfer_gbps, matched && sized),
                  opt_num(r.busbw_transfer_gbps, matched && sized && r.group_size > 0),
                  opt_num(r.wait_us, matched), opt_num(r.start_skew_us, matched),
                  static_cast<int64_t>(r.slowest_rank), r.slowest_rank_us,
                  static_cast<int64_t>(r.fastest_rank), r.fastest_rank_us});
    summary.rows.push_back(std::move(cells));
  }

  report::Table per_rank{"collective_per_rank", {"rank"}, {}};
  per_rank.columns.insert(per_rank.columns.end(), size_cols.begin(), size_cols.end());
  for (const auto& r : rep.per_rank) {
    std::vector<report::Cell> cells{static_cast<int64_t>(r.rank)};
    auto rest = size_cells(r);
    cells.insert(cells.end(), rest.begin(), rest.end());
    per_rank.rows.push_back(std::move(cells));
  }

  report::Table ranks{"collective_ranks",
                      {"rank", "trace", "collectives", "communication_time_us",
                       "exposed_communication_us", "exposed_communication_pct"},
                      {}};
  for (const auto& r : rep.ranks) {
    ranks.rows.push_back(
        {static_cast<int64_t>(r.rank), r.trace_path, static_cast<int64_t>(r.collectives),
         r.communication_us, r.exposed_communication_us,
         opt_num(100.0 * r.exposed_communication_us / r.communication_us, r.communication_us > 0)});
  }

  report::Table calls{"collective_calls",
                      {"rank", "collective", "group", "instance", "kernel", "ts_us", "dur_us",
                       "dtype", "message_bytes", "size_source", "group_size", "group_size_source"},
                      {}};
  for (const auto& c : rep.calls) {
    calls.rows.push_back(
        {static_cast<int64_t>(c.rank), std::string(to_string(c.kind)), c.group,
         static_cast<int64_t>(c.instance), c.kernel, us(c.ts_ns), us(c.dur_ns), c.dtype,
         opt_int(c.message_bytes), c.size_source,
         c.group_size > 0 ? report::Cell{static_cast<int64_t>(c.group_size)} : report::Cell{},
         c.group_size_source});
  }
  return {std::move(summary), std::move(per_rank), std::move(ranks), std::move(calls)};
}

}  // namespace magpie::analysis
