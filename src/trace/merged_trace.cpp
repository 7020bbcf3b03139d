#include "trace/merged_trace.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <string>

namespace magpie::trace {

std::optional<int> rank_from_process_name(std::string_view process_name) {
  static const std::regex kRank(R"(^\s*RANK\s+(\d+)\b)", std::regex::icase);
  std::string name(process_name);
  std::smatch m;
  if (!std::regex_search(name, m, kRank)) return std::nullopt;
  try {
    return std::stoi(m[1].str());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

// A copy of `from` with the same ids (the pool holds each string once, so
// interning them again in id order gives each its old id).
StringPool copy_pool(const StringPool& from) {
  StringPool to;
  for (StringId id = 1; id < from.size(); ++id) to.intern(from.view(id));
  return to;
}

// The rows of one rank. Detail tables are copied whole, so detail indices stay valid.
Trace select_rank(const Trace& all, int rank, const std::vector<uint32_t>& rows,
                  const std::map<int64_t, int>& rank_of_pid) {
  Trace t;
  t.path = all.path;
  t.format = all.format;
  t.rank = rank;
  t.rank_source = RankSource::kProcessName;
  t.world_size = all.world_size;
  t.base_time_ns = all.base_time_ns;
  t.strings = copy_pool(all.strings);
  t.devices = all.devices;
  t.stats = all.stats;
  t.stats.events_kept = rows.size();
  t.warnings = all.warnings;
  const EventTable& a = all.events;
  EventTable& e = t.events;
  e.reserve(rows.size());
  for (uint32_t r : rows) {
    e.ts_ns.push_back(a.ts_ns[r]);
    e.dur_ns.push_back(a.dur_ns[r]);
    e.name.push_back(a.name[r]);
    e.cat_name.push_back(a.cat_name[r]);
    e.category.push_back(a.category[r]);
    e.phase.push_back(a.phase[r]);
    e.pid.push_back(a.pid[r]);
    e.tid.push_back(a.tid[r]);
    e.correlation.push_back(a.correlation[r]);
    e.external_id.push_back(a.external_id[r]);
    e.device.push_back(a.device[r]);
    e.stream.push_back(a.stream[r]);
    e.detail.push_back(a.detail[r]);
    if (const CollectiveArgs* c = a.collective_of(r)) {
      CollectiveArgs copy = *c;
      copy.row = static_cast<uint32_t>(e.ts_ns.size() - 1);
      e.collectives.push_back(copy);
    }
  }
  e.kernel_details = a.kernel_details;
  e.op_details = a.op_details;
  for (const auto& f : all.flows) {
    auto it = rank_of_pid.find(f.pid);
    if (it != rank_of_pid.end() && it->second == rank) t.flows.push_back(f);
  }
  for (const auto& [pid, name] : all.process_names) {
    auto it = rank_of_pid.find(pid);
    if (it != rank_of_pid.end() && it->second == rank) t.process_names[pid] = name;
  }
  for (const auto& [key, name] : all.thread_names) {
    auto it = rank_of_pid.find(key.first);
    if (it != rank_of_pid.end() && it->second == rank) t.thread_names[key] = name;
  }
  return t;
}

}  // namespace

std::vector<Trace> split_merged_trace(Trace&& trace) {
  std::map<int64_t, int> rank_of_pid;
  std::map<int, size_t> ranks;
  for (const auto& [pid, name] : trace.process_names) {
    if (auto r = rank_from_process_name(name)) {
      rank_of_pid[pid] = *r;
      ++ranks[*r];
    }
  }
  std::vector<Trace> out;
  if (ranks.size() == 1 && trace.rank < 0) {
    trace.rank = ranks.begin()->first;
    trace.rank_source = RankSource::kProcessName;
  }
  if (ranks.size() < 2) {
    out.push_back(std::move(trace));
    return out;
  }
  std::map<int, std::vector<uint32_t>> rows;
  size_t orphans = 0;
  const EventTable& e = trace.events;
  for (uint32_t r = 0; r < e.size(); ++r) {
    auto it = rank_of_pid.find(e.pid[r]);
    if (it == rank_of_pid.end()) {
      ++orphans;
      continue;
    }
    rows[it->second].push_back(r);
  }
  for (const auto& [rank, rank_rows] : rows) {
    out.push_back(select_rank(trace, rank, rank_rows, rank_of_pid));
    out.back().warnings.push_back(fmt::format(
        "{}: a merged trace of {} ranks (processes named \"RANK n - …\"): rank {} is analysed on "
        "its own ({} events)",
        trace.path, ranks.size(), rank, rank_rows.size()));
    if (orphans > 0) {
      out.back().warnings.push_back(fmt::format(
          "{}: {} events belong to processes without a \"RANK n\" name and are left out",
          trace.path, orphans));
    }
  }
  if (out.empty()) out.push_back(std::move(trace));
  return out;
}

}  // namespace magpie::trace
