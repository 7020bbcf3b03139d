#include "trace/rank_discovery.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/text_head.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::trace {

namespace fs = std::filesystem;

namespace {

// distributedInfo sits before traceEvents in Kineto's files; 1 MiB also holds
// deviceProperties of an 8-GPU node.
constexpr size_t kHeadBytes = 1 << 20;

std::string_view strip_suffix(std::string_view name) {
  for (std::string_view s : {".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json",
                             ".json.gz", ".json", "_kernel_trace.csv"}) {
    if (name.size() > s.size() && name.ends_with(s)) return name.substr(0, name.size() - s.size());
  }
  return name;
}

bool spans_known(const TraceOrigin& o) { return o.end_ns > o.begin_ns; }

bool overlap(const TraceOrigin& a, const TraceOrigin& b) {
  return spans_known(a) && spans_known(b) && a.begin_ns < b.end_ns && b.begin_ns < a.end_ns;
}

std::string source_text(const TraceOrigin& o, RankSource s) {
  switch (s) {
    case RankSource::kTrace: return "distributedInfo.rank";
    case RankSource::kProcessName: return "its merged process name";
    case RankSource::kFileName: return "its file name";
    case RankSource::kOrder: return "file order";
  }
  return o.file;
}

// Why two traces of one rank are not cycles of one process; empty when they are.
std::string not_cycles_reason(const TraceOrigin& a, const TraceOrigin& b) {
  if (a.file == b.file) return "";  // pieces of one merged file never share a rank
  if (a.worker != b.worker) {
    return fmt::format("their names differ beyond the profiler's timestamp ('{}' vs '{}')",
                       a.worker, b.worker);
  }
  if (a.host_pid >= 0 && b.host_pid >= 0 && a.host_pid != b.host_pid) {
    return fmt::format("they come from two processes (pid {} and {})", a.host_pid, b.host_pid);
  }
  if (overlap(a, b)) return "they overlap in time (the same profiling window twice?)";
  return "";
}

}  // namespace

bool RankPlan::has_cycles() const {
  return std::any_of(assignments.begin(), assignments.end(),
                     [](const RankAssignment& a) { return a.cycles > 1; });
}

std::optional<size_t> RankPlan::representative(int rank) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < assignments.size(); ++i) {
    if (assignments[i].rank != rank) continue;
    if (!best || assignments[i].cycle > assignments[*best].cycle) best = i;
  }
  return best;
}

std::optional<int> rank_from_file_name(std::string_view file_name) {
  static const std::regex kMagpie(R"(-rank-(\d+)\.)");
  static const std::regex kLoose(R"((?:rank|worker)[-_]?(\d+))", std::regex::icase);
  static const std::regex kSglang(R"(-TP-(\d+))");
  std::string name(file_name);
  std::smatch m;
  if (std::regex_search(name, m, kMagpie) || std::regex_search(name, m, kLoose) ||
      std::regex_search(name, m, kSglang)) {
    try {
      return std::stoi(m[1].str());
    } catch (const std::exception&) {
      return std::nullopt;  // digits beyond int: not a rank
    }
  }
  return std::nullopt;
}

std::string worker_name(std::string_view file_name) {
  static const std::regex kLongNumber(R"(\d{9,})");
  static const std::regex kDate(R"([A-Z][a-z]{2}_\d{1,2}_\d{2}_\d{2}_\d{2})");
  std::string stem(strip_suffix(file_name));
  stem = std::regex_replace(stem, kDate, "*");
  return std::regex_replace(stem, kLongNumber, "*");
}

TraceOrigin origin_of(const Trace& trace) {
  TraceOrigin o;
  o.file = trace.path;
  if (trace.rank >= 0 && trace.rank_source != RankSource::kOrder &&
      trace.rank_source != RankSource::kFileName) {
    o.rank = trace.rank;
    o.source = trace.rank_source;
  }
  o.world_size = trace.world_size;
  o.worker = worker_name(fs::path(trace.path).filename().string());
  // The host process: the pid of most CPU-side events (GPU events carry the device).
  std::map<int64_t, size_t> cpu_pids;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  const auto& t = trace.events;
  for (size_t r = 0; r < t.size(); ++r) {
    const Category c = t.category[r];
    if ((c == Category::kCpuOp || c == Category::kCudaRuntime || c == Category::kUserAnnotation) &&
        t.pid[r] >= 0) {
      ++cpu_pids[t.pid[r]];
    }
    if (t.phase[r] == Phase::kComplete || t.phase[r] == Phase::kInstant) {
      lo = std::min(lo, t.ts_ns[r]);
      hi = std::max(hi, t.end_ns(r));
    }
  }
  size_t most = 0;
  for (auto [pid, n] : cpu_pids) {
    if (n > most) o.host_pid = pid, most = n;
  }
  if (lo < hi) {
    o.begin_ns = trace.base_time_ns + lo;
    o.end_ns = trace.base_time_ns + hi;
  }
  return o;
}

TraceOrigin peek_origin(const fs::path& path) {
  TraceOrigin o;
  o.file = path.string();
  o.worker = worker_name(path.filename().string());
  const std::string head = read_text_head(path, kHeadBytes);
  // The object's keys before "traceEvents", closed as an object of their own.
  const size_t key = head.find("\"traceEvents\"");
  const size_t open = head.find_first_not_of(" \t\r\n");
  if (key == std::string::npos || open == std::string::npos || head[open] != '{') return o;
  std::string outer = head.substr(0, key);
  while (!outer.empty() && (outer.back() == ',' || std::isspace(static_cast<unsigned char>(outer.back()))))
    outer.pop_back();
  // Older writers (HTA's samples, Kineto before distributedInfo moved up) put
  // every other key after the events: only the whole trace can say its rank.
  if (outer.find_first_not_of(" \t\r\n{") == std::string::npos) {
    return origin_of(load_trace(path, IngestOptions{}));
  }
  outer += "}";
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(outer).get(root) != simdjson::SUCCESS) return o;  // the full load decides
  simdjson::dom::object dist;
  if (root["distributedInfo"].get_object().get(dist) == simdjson::SUCCESS) {
    int64_t v = 0;
    if (dist["rank"].get_int64().get(v) == simdjson::SUCCESS) {
      o.rank = static_cast<int>(v);
      o.source = RankSource::kTrace;
    }
    if (dist["world_size"].get_int64().get(v) == simdjson::SUCCESS) o.world_size = static_cast<int>(v);
  }
  return o;
}

RankPlan plan_ranks(const std::vector<TraceOrigin>& origins) {
  RankPlan plan;
  const size_t n = origins.size();
  plan.assignments.resize(n);
  std::vector<bool> ranked(n, false);
  std::set<int> taken;
  for (size_t i = 0; i < n; ++i) {
    auto& a = plan.assignments[i];
    if (origins[i].rank >= 0) {
      a.rank = origins[i].rank;
      a.source = origins[i].source;
    } else if (auto r = rank_from_file_name(fs::path(origins[i].file).filename().string())) {
      a.rank = *r;
      a.source = RankSource::kFileName;
    } else {
      continue;
    }
    ranked[i] = true;
    taken.insert(a.rank);
  }
  // The rest by file order, one rank per worker name; a lone trace is rank 0.
  std::map<std::string, int> worker_rank;
  int next = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ranked[i]) continue;
    auto& a = plan.assignments[i];
    a.source = RankSource::kOrder;
    if (auto w = worker_rank.find(origins[i].worker); w != worker_rank.end()) {
      a.rank = w->second;
      continue;
    }
    while (taken.count(next)) ++next;
    a.rank = next;
    taken.insert(next);
    worker_rank[origins[i].worker] = next;
    if (n > 1) {
      plan.warnings.push_back(fmt::format(
          "{}: no rank in the trace (distributedInfo) or its file name (rank<N>, worker<N>, "
          "-rank-<N>); using rank {} by file order",
          origins[i].file, next));
    }
  }
  // Duplicates: cycles of one process, or an error.
  std::map<int, std::vector<size_t>> by_rank;
  for (size_t i = 0; i < n; ++i) by_rank[plan.assignments[i].rank].push_back(i);
  for (auto& [rank, members] : by_rank) {
    plan.ranks.push_back(rank);
    if (members.size() < 2) continue;
    for (size_t x = 0; x < members.size(); ++x) {
      for (size_t y = x + 1; y < members.size(); ++y) {
        const TraceOrigin& a = origins[members[x]];
        const TraceOrigin& b = origins[members[y]];
        const std::string why = not_cycles_reason(a, b);
        if (why.empty()) continue;
        throw Error(
            ErrorKind::kUsage,
            fmt::format("two traces are rank {}: {} (rank from {}) and {} (rank from {}), and they "
                        "are not profiling cycles of one process: {}",
                        rank, a.file, source_text(a, plan.assignments[members[x]].source), b.file,
                        source_text(b, plan.assignments[members[y]].source), why),
            a.file, std::nullopt,
            "give the folder one trace per rank (or the cycles of one process, whose file names "
            "differ only in the profiler's timestamp); move the other run's traces elsewhere");
      }
    }
    std::stable_sort(members.begin(), members.end(), [&](size_t x, size_t y) {
      const TraceOrigin& a = origins[x];
      const TraceOrigin& b = origins[y];
      if (spans_known(a) && spans_known(b) && a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
      return a.file < b.file;  // the names' timestamps order them
    });
    std::string files;
    for (size_t c = 0; c < members.size(); ++c) {
      auto& a = plan.assignments[members[c]];
      a.cycle = static_cast<int>(c);
      a.cycles = static_cast<int>(members.size());
      files += fmt::format("{}cycle {} = {}", c ? ", " : "", c, origins[members[c]].file);
    }
    plan.warnings.push_back(fmt::format(
        "rank {} has {} profiling cycles of one process ({}): each is analysed as its own cycle",
        rank, members.size(), files));
  }
  return plan;
}

void apply_rank_plan(const RankPlan& plan, const std::vector<Trace*>& traces) {
  for (size_t i = 0; i < traces.size() && i < plan.assignments.size(); ++i) {
    const auto& a = plan.assignments[i];
    traces[i]->rank = a.rank;
    traces[i]->rank_source = a.source;
    traces[i]->cycle = a.cycle;
    traces[i]->cycles = a.cycles;
  }
}

std::string rank_label(int rank, int cycle, int cycles) {
  return cycles > 1 ? fmt::format("rank {} cycle {}", rank, cycle) : fmt::format("rank {}", rank);
}

std::string rank_file_label(int rank, int cycle, int cycles) {
  return cycles > 1 ? fmt::format("rank{}_cycle{}", rank, cycle) : fmt::format("rank{}", rank);
}

}  // namespace magpie::trace
