#include "analysis/gap_analysis.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "core/statistics.hpp"

namespace magpie::analysis {

using trace::Category;
using trace::StringId;

void KernelStats::add(const KernelStats& other) {
  calls += other.calls;
  total_us += other.total_us;
  durations_us.insert(durations_us.end(), other.durations_us.begin(), other.durations_us.end());
  for (const auto& s : other.shapes)
    if (shapes.size() < 10 && std::find(shapes.begin(), shapes.end(), s) == shapes.end())
      shapes.push_back(s);
  for (const auto& [op, n] : other.launching_ops) launching_ops[op] += n;
}

std::string format_input_dims(std::string_view json) {
  // Top-level list of per-input lists; keep the non-empty lists, drop spaces.
  std::string out, current;
  int depth = 0;
  bool has_content = false;
  for (char c : json) {
    if (c == '[') {
      ++depth;
      if (depth == 2) {
        current = "[";
        has_content = false;
        continue;
      }
    } else if (c == ']') {
      if (depth == 2) {
        if (has_content) {
          if (!out.empty()) out += 'x';
          out.append(current).append("]");
        }
        --depth;
        continue;
      }
      --depth;
    }
    if (depth >= 2 && c != ' ' && c != '\n' && c != '\t') {
      current += c;
      has_content = true;
    }
  }
  return out;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Magpie's filter (case-insensitive substring, ignore list first). With the
// default categories it selects device work only: kernels, copies and sets as
// the profiler marks them, so another tool's "gpu" category (Chrome's
// GPU-process tasks) is never taken for kernels; a category list of the
// user's own is matched over every event, as Magpie does (MTIA's
// mtia_ccp_events). A category is matched by its text and by Kineto's current
// name for it, so the legacy "Memcpy"/"Memset"/"Kernel" of older traces count
// as gpu_memcpy, gpu_memset and kernel do (docs/TRACELENS.md "Ranks, cycles
// and kinds of trace").
std::vector<bool> category_filter(const trace::Trace& trace, const GapAnalysisConfig& config) {
  std::vector<std::string> allow, ignore;
  for (const auto& c : config.categories) allow.push_back(lower(c));
  for (const auto& c : config.ignore_categories) ignore.push_back(lower(c));
  auto matches = [](const std::vector<std::string>& list, const std::string& a, const std::string& b) {
    for (const auto& x : list)
      if (a.find(x) != std::string::npos || b.find(x) != std::string::npos) return true;
    return false;
  };
  std::vector<bool> keep_by_cat(trace.strings.size(), false);
  std::vector<bool> decided(trace.strings.size(), false);
  std::vector<bool> keep(trace.events.size(), false);
  const bool device_only = config.categories == GapAnalysisConfig{}.categories;
  for (size_t r = 0; r < trace.events.size(); ++r) {
    if (device_only && !trace::is_gpu_activity(trace.events.category[r])) continue;
    StringId id = trace.events.cat_name[r];
    if (!decided[id]) {
      const std::string cat = lower(trace.str(id));
      const std::string canonical(trace::to_string(trace.events.category[r]));
      bool ok = !matches(ignore, cat, canonical);
      if (ok && !allow.empty()) ok = matches(allow, cat, canonical);
      keep_by_cat[id] = ok;
      decided[id] = true;
    }
    keep[r] = keep_by_cat[id];
  }
  return keep;
}

bool is_communication(const sources::KernelName& k) {
  return k.category == sources::KernelCategory::kCommunication;
}
bool is_memory(Category c, const sources::KernelName& k) {
  return c == Category::kGpuMemcpy || c == Category::kGpuMemset ||
         k.category == sources::KernelCategory::kMemory;
}

// Words in a category name of no known kind that suggest device work of
// another accelerator (Meta's MTIA writes mtia_ccp_events and mtia_runtime).
bool device_like(std::string_view category) {
  const std::string c = lower(category);
  for (std::string_view w : {"runtime", "kernel", "gpu", "device", "mtia", "ccp", "xpu", "hpu",
                             "npu", "tpu", "memcpy", "memset"})
    if (c.find(w) != std::string::npos) return true;
  return false;
}

TraceCensus take_census(const trace::Trace& trace) {
  const auto& t = trace.events;
  TraceCensus c;
  std::unordered_map<StringId, size_t> other;
  for (size_t r = 0; r < t.size(); ++r) {
    switch (t.category[r]) {
      case Category::kCpuOp: ++c.cpu_ops; break;
      case Category::kCudaRuntime:
      case Category::kCudaDriver: {
        ++c.runtime_calls;
        const std::string_view name = trace.name(r);
        if (name.find("Launch") != std::string_view::npos) {
          if (c.launch_calls++ == 0) c.launch_example = std::string(name);
        }
        break;
      }
      case Category::kCudaProfilerRange: ++c.profiler_ranges; break;
      case Category::kOther: ++other[t.cat_name[r]]; break;
      default:
        if (trace::is_gpu_activity(t.category[r])) ++c.device_rows;
    }
  }
  for (const auto& [id, n] : other)
    if (device_like(trace.str(id))) c.device_like_categories.emplace_back(std::string(trace.str(id)), n);
  std::sort(c.device_like_categories.begin(), c.device_like_categories.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return c;
}

}  // namespace

RankGapResult analyze_rank(const trace::Trace& trace, const GapAnalysisConfig& config) {
  const auto& t = trace.events;
  RankGapResult result;
  result.rank = trace.rank;
  result.trace_file = trace.path;
  result.rank_source = trace.rank_source;
  result.cycle = trace.cycle;
  result.cycles = trace.cycles;
  result.ingest = trace.stats;
  result.warnings = trace.warnings;

  // Time window over the span of every timed event, as Magpie does.
  int64_t win_begin = INT64_MIN, win_end = INT64_MAX;
  if ((config.start_pct > 0 || config.end_pct < 100) && t.size() > 0) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t r = 0; r < t.size(); ++r) {
      lo = std::min(lo, t.ts_ns[r]);
      hi = std::max(hi, t.end_ns(r));
    }
    double span = static_cast<double>(hi - lo);
    win_begin = lo + static_cast<int64_t>(span * config.start_pct / 100.0);
    win_end = lo + static_cast<int64_t>(span * config.end_pct / 100.0);
  }
  result.window_ns = {win_begin, win_end};
  auto in_window = [&](size_t r) { return t.end_ns(r) >= win_begin && t.ts_ns[r] <= win_end; };

  const trace::TraceLinks& links = trace::links_of(trace);
  result.links = links.summary;
  std::vector<bool> keep = category_filter(trace, config);
  const auto min_dur_ns = static_cast<int64_t>(config.min_duration_us * 1000.0);

  // Names are parsed once per distinct string, not per event. Per-string
  // tables are indexed by the interned id (a large trace has tens of
  // thousands of strings, and hundreds of thousands of GPU rows look them up).
  constexpr uint32_t kUnseen = UINT32_MAX;
  std::vector<uint32_t> parsed_slot(trace.strings.size(), kUnseen);
  std::vector<sources::KernelName> parsed;
  auto parsed_name = [&](StringId id) -> const sources::KernelName& {
    if (parsed_slot[id] == kUnseen) {
      parsed_slot[id] = static_cast<uint32_t>(parsed.size());
      parsed.push_back(sources::parse_kernel_name(trace.str(id)));
    }
    return parsed[parsed_slot[id]];
  };
  std::vector<uint32_t> kernel_slot(trace.strings.size(), kUnseen);
  // Per kernel while the rows go by, keyed by interned ids (no string built
  // per call): launching op name → calls (a kernel has a few), and Input Dims
  // texts, first seen first.
  struct Pending {
    std::vector<std::pair<StringId, size_t>> ops;
    std::vector<StringId> dims;
  };
  std::vector<Pending> pending;
  std::vector<Interval> comp, comm, copies;

  // CPU events nest: each counts its self time, its duration less that of the
  // counted events directly inside it (the nearest counted ancestor on the
  // thread takes a child's time off), so nested ops are not counted twice.
  std::vector<int64_t> child_ns;
  for (size_t r = 0; r < t.size(); ++r) {
    if (!keep[r] || trace::is_gpu_activity(t.category[r]) || t.phase[r] != trace::Phase::kComplete)
      continue;
    if (child_ns.empty()) child_ns.assign(t.size(), 0);
    int32_t a = links.parent[r];
    while (a >= 0 && !keep[static_cast<size_t>(a)]) a = links.parent[static_cast<size_t>(a)];
    if (a >= 0) child_ns[static_cast<size_t>(a)] += t.dur_ns[r];
  }

  for (size_t r = 0; r < t.size(); ++r) {
    if (!in_window(r)) continue;
    if (trace::is_gpu_activity(t.category[r])) {
      const auto& k = parsed_name(t.name[r]);
      Interval iv{t.ts_ns[r], t.end_ns(r)};
      if (is_memory(t.category[r], k)) {
        copies.push_back(iv);
      } else if (is_communication(k)) {
        comm.push_back(iv);
      } else {
        comp.push_back(iv);
      }
    }
    if (!keep[r] || t.dur_ns[r] < min_dur_ns) continue;
    uint32_t& slot = kernel_slot[t.name[r]];
    if (slot == kUnseen) {
      slot = static_cast<uint32_t>(result.kernels.size());
      result.kernels.emplace_back();
      result.kernels.back().name = std::string(trace.name(r));
      pending.emplace_back();
    }
    KernelStats& ks = result.kernels[slot];
    Pending& pk = pending[slot];
    const bool device = trace::is_gpu_activity(t.category[r]);
    int64_t counted_ns = t.dur_ns[r];
    if (!device && !child_ns.empty()) counted_ns = std::max<int64_t>(0, counted_ns - child_ns[r]);
    ++(device ? result.device_events : result.host_events);
    double us = static_cast<double>(counted_ns) * 1e-3;
    ++ks.calls;
    ks.total_us += us;
    ks.durations_us.push_back(us);
    if (trace::is_gpu_activity(t.category[r])) {
      int32_t op = trace::launching_op(trace, links, r);
      if (op >= 0) {
        const StringId op_name = t.name[static_cast<size_t>(op)];
        auto seen = std::find_if(pk.ops.begin(), pk.ops.end(), [&](const auto& e) { return e.first == op_name; });
        if (seen == pk.ops.end()) {
          pk.ops.emplace_back(op_name, 1);
        } else {
          ++seen->second;
        }
        uint32_t d = t.detail[static_cast<size_t>(op)];
        if (d != trace::kNoDetail && links.op_by_external_id_row[r] == op) {
          StringId dims = t.op_details[d].input_dims;
          if (std::find(pk.dims.begin(), pk.dims.end(), dims) == pk.dims.end()) pk.dims.push_back(dims);
        }
      }
    }
  }
  std::unordered_map<StringId, std::string> shape_text;  // Input Dims id → formatted
  for (size_t k = 0; k < result.kernels.size(); ++k) {
    KernelStats& ks = result.kernels[k];
    for (const auto& [name, calls] : pending[k].ops) ks.launching_ops[std::string(trace.str(name))] += calls;
    for (StringId dims : pending[k].dims) {
      auto [s, new_dims] = shape_text.emplace(dims, std::string{});
      if (new_dims) s->second = format_input_dims(trace.str(dims));
      if (!s->second.empty() && ks.shapes.size() < 10 &&
          std::find(ks.shapes.begin(), ks.shapes.end(), s->second) == ks.shapes.end())
        ks.shapes.push_back(s->second);
    }
  }
  for (const auto& k : result.kernels) result.total_duration_us += k.total_us;
  std::stable_sort(result.kernels.begin(), result.kernels.end(),
                   [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
  result.timeline = compute_gpu_timeline(std::move(comp), std::move(comm), std::move(copies));
  if (result.kernels.empty()) result.census = take_census(trace);
  return result;
}

TimeBasis time_basis(const GapAnalysisResult& result) {
  size_t device = 0, host = 0;
  for (const auto& r : result.ranks) {
    device += r.device_events;
    host += r.host_events;
  }
  if (host == 0) return TimeBasis::kDevice;
  return device == 0 ? TimeBasis::kHostSelf : TimeBasis::kMixed;
}

std::string_view total_time_column(TimeBasis basis) {
  switch (basis) {
    case TimeBasis::kDevice: return "Self CUDA total (us)";
    case TimeBasis::kHostSelf: return "Self CPU total (us)";
    case TimeBasis::kMixed: return "Self total (us)";
  }
  return "Self total (us)";
}

std::string_view to_string(TimeBasis basis) {
  switch (basis) {
    case TimeBasis::kDevice: return "device";
    case TimeBasis::kHostSelf: return "host_self";
    case TimeBasis::kMixed: return "mixed";
  }
  return "mixed";
}

void merge_ranks(GapAnalysisResult& result) {
  std::sort(result.ranks.begin(), result.ranks.end(),
            [](const RankGapResult& a, const RankGapResult& b) {
              return a.rank != b.rank ? a.rank < b.rank : a.cycle < b.cycle;
            });
  std::unordered_map<std::string, size_t> index_of;
  result.merged.clear();
  result.total_duration_us = 0;
  for (const auto& rank : result.ranks) {
    result.total_duration_us += rank.total_duration_us;
    for (const auto& k : rank.kernels) {
      auto [it, fresh] = index_of.emplace(k.name, result.merged.size());
      if (fresh) {
        result.merged.emplace_back();
        result.merged.back().name = k.name;
      }
      result.merged[it->second].add(k);
    }
  }
  std::stable_sort(result.merged.begin(), result.merged.end(),
                   [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
}

std::vector<KernelRow> make_rows(const std::vector<KernelStats>& kernels, double grand_total_us,
                                 size_t top_k) {
  std::vector<KernelRow> rows;
  double cumulative = 0;
  for (size_t i = 0; i < kernels.size() && i < top_k; ++i) {
    const KernelStats& k = kernels[i];
    KernelRow row;
    row.name = k.name;
    row.calls = k.calls;
    row.total_us = k.total_us;
    row.avg_us = k.calls ? k.total_us / static_cast<double>(k.calls) : 0;
    std::vector<double> d = k.durations_us;
    auto s = stats::summarize(d);
    row.median_us = s.median;
    row.min_us = s.min;
    row.max_us = s.max;
    row.std_us = s.stddev;
    row.pct_total = grand_total_us > 0 ? k.total_us / grand_total_us * 100.0 : 0;
    cumulative += row.pct_total;
    row.cumulative_pct = cumulative;
    for (size_t j = 0; j < k.shapes.size(); ++j) {
      if (j) row.input_shapes.append("; ");
      row.input_shapes.append(k.shapes[j]);
    }
    size_t best = 0;
    for (const auto& [op, n] : k.launching_ops)
      if (n > best) {
        best = n;
        row.launching_op = op;
      }
    row.parsed = sources::parse_kernel_name(k.name);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace magpie::analysis
