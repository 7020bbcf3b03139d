#include "analysis/graph_capture_alignment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

namespace magpie::analysis {

using trace::Category;

namespace {

constexpr size_t kProbe = 16;    // kernels compared when choosing where a graph starts
constexpr size_t kMaxSkip = 32;  // captured launches a replay may skip (not captured work)
constexpr size_t kMaxStarts = 256;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_capture_marker(std::string_view name, std::string_view what) {
  const std::string n = lower(name);
  return (n.starts_with("cuda") || n.starts_with("hip") || n.starts_with("cu")) &&
         n.find(what) != std::string::npos;
}

WorkKind work_kind_of_gpu_row(Category c) {
  switch (c) {
    case Category::kKernel:
      return WorkKind::kKernel;
    case Category::kGpuMemset:
      return WorkKind::kMemset;
    case Category::kGpuMemcpy:
      return WorkKind::kMemcpy;
    default:
      return WorkKind::kNone;
  }
}

int32_t op_around(const CaptureTrace& c, uint32_t row,
                  const std::unordered_map<int64_t, int32_t>& op_by_ext) {
  const auto& e = c.trace.events;
  if (auto it = op_by_ext.find(e.external_id[row]);
      e.external_id[row] != trace::kNoValue && it != op_by_ext.end()) {
    return it->second;
  }
  for (int32_t p = c.links.parent[row]; p >= 0; p = c.links.parent[static_cast<size_t>(p)]) {
    if (e.category[static_cast<size_t>(p)] == Category::kCpuOp) return p;
  }
  return -1;
}

// Capture windows of one trace: [Begin, End] capture calls, in time order.
std::vector<std::pair<int64_t, int64_t>> capture_windows(const trace::Trace& t) {
  std::vector<std::pair<int64_t, bool>> marks;  // (ts, is_begin)
  for (uint32_t r = 0; r < t.events.size(); ++r) {
    if (!trace::is_launch_api(t.events.category[r])) continue;
    const std::string_view n = t.name(r);
    if (is_capture_marker(n, "begincapture")) marks.emplace_back(t.events.ts_ns[r], true);
    if (is_capture_marker(n, "endcapture")) marks.emplace_back(t.events.end_ns(r), false);
  }
  std::sort(marks.begin(), marks.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t open = 0;
  bool is_open = false;
  for (auto [ts, begin] : marks) {
    if (begin) {
      open = ts;
      is_open = true;
    } else if (is_open) {
      out.emplace_back(open, ts);
      is_open = false;
    }
  }
  return out;
}

// Replay rows' kinds as a string key (one char per row).
std::string signature(const trace::EventTable& e, const std::vector<uint32_t>& rows) {
  std::string s;
  s.reserve(rows.size());
  for (uint32_t r : rows)
    s.push_back(static_cast<char>('0' + static_cast<int>(work_kind_of_gpu_row(e.category[r]))));
  return s;
}

std::string signature(const std::vector<CapturedLaunch>& launches, const CapturedGraph& g) {
  std::string s;
  s.reserve(g.count);
  for (size_t i = g.first; i < g.first + g.count; ++i)
    s.push_back(static_cast<char>('0' + static_cast<int>(launches[i].kind)));
  return s;
}

// Walks replay kinds against a captured range in order, pairing equal kinds and
// skipping at most kMaxSkip captured launches per step; returns the pairs.
std::vector<std::pair<size_t, size_t>> walk_by_kind(const std::string& replay,
                                                    const std::string& captured) {
  std::vector<std::pair<size_t, size_t>> pairs;
  size_t c = 0;
  for (size_t r = 0; r < replay.size(); ++r) {
    for (size_t k = c; k < captured.size() && k <= c + kMaxSkip; ++k) {
      if (captured[k] == replay[r]) {
        pairs.emplace_back(r, k);
        c = k + 1;
        break;
      }
    }
  }
  return pairs;
}

}  // namespace

bool has_capture_window(const trace::Trace& t) { return !capture_windows(t).empty(); }

WorkKind work_kind_of_launch_api(std::string_view api) {
  const std::string n = lower(api);
  if (n.find("graphlaunch") != std::string::npos) return WorkKind::kNone;
  if (n.find("launchkernel") != std::string::npos ||
      n.find("launchcooperativekernel") != std::string::npos || n == "cudalaunch" ||
      n.starts_with("culaunchkernel") || n.starts_with("hipextlaunch") ||
      n.starts_with("hipmodulelaunch") || n.starts_with("hipextmodulelaunch"))
    return WorkKind::kKernel;
  if (n.find("memset") != std::string::npos) return WorkKind::kMemset;
  if (n.find("memcpy") != std::string::npos) return WorkKind::kMemcpy;
  return WorkKind::kNone;
}

std::vector<CapturedLaunch> captured_launches(const CaptureTrace& c, uint32_t index) {
  const auto& e = c.trace.events;
  std::unordered_map<int64_t, int32_t> op_by_ext;
  for (size_t r = 0; r < e.size(); ++r) {
    if (e.category[r] == Category::kCpuOp && e.external_id[r] != trace::kNoValue) {
      op_by_ext.emplace(e.external_id[r], static_cast<int32_t>(r));
    }
  }
  // Launch calls whose work ran here were not captured (warm-up, eager work).
  std::vector<bool> ran(e.size(), false);
  for (size_t r = 0; r < e.size(); ++r) {
    if (trace::is_gpu_activity(e.category[r]) && c.links.launch_of[r] >= 0)
      ran[static_cast<size_t>(c.links.launch_of[r])] = true;
  }
  std::vector<CapturedLaunch> out;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (!trace::is_launch_api(e.category[r])) continue;
    const bool named = e.detail[r] != trace::kNoDetail &&
                       e.kernel_details[e.detail[r]].kernel != trace::kEmptyString;
    const WorkKind kind = named ? WorkKind::kKernel : work_kind_of_launch_api(c.trace.name(r));
    if (!named && (kind == WorkKind::kNone || ran[r])) continue;
    CapturedLaunch l;
    l.capture = index;
    l.row = r;
    l.op = op_around(c, r, op_by_ext);
    l.kind = kind;
    l.named = named;
    out.push_back(l);
  }
  std::sort(out.begin(), out.end(), [&](const CapturedLaunch& a, const CapturedLaunch& b) {
    return e.ts_ns[a.row] < e.ts_ns[b.row];
  });
  return out;
}

GraphAlignment align_graph_capture(const trace::Trace& replay, const trace::TraceLinks& links,
                                   const std::vector<CaptureTrace>& captures) {
  GraphAlignment g;
  const auto& e = replay.events;
  g.launch_of_row.assign(e.size(), -1);
  size_t unnamed_outside = 0;
  for (uint32_t i = 0; i < captures.size(); ++i) {
    const auto all = captured_launches(captures[i], i);
    const auto& ct = captures[i].trace;
    for (const auto& l : all)
      if (l.named) g.launches.push_back(l);
    // Unnamed launches, one graph per capture window (or the whole trace).
    auto windows = capture_windows(ct);
    const bool whole = windows.empty();
    if (whole) windows.emplace_back(INT64_MIN, INT64_MAX);
    for (const auto& [begin, end] : windows) {
      CapturedGraph cg{i, g.launches.size(), 0, begin, end};
      for (const auto& l : all) {
        const int64_t ts = ct.events.ts_ns[l.row];
        if (l.named || ts < begin || ts > end) continue;
        g.launches.push_back(l);
        g.launches.back().graph = static_cast<int32_t>(g.captured_graphs.size());
      }
      cg.count = g.launches.size() - cg.first;
      if (cg.count > 0) g.captured_graphs.push_back(cg);
    }
    if (!whole) {
      for (const auto& l : all) {
        const int64_t ts = ct.events.ts_ns[l.row];
        unnamed_outside +=
            !l.named && std::none_of(windows.begin(), windows.end(), [&](const auto& w) {
              return ts >= w.first && ts <= w.second;
            });
      }
    }
  }
  // Kernel names as ids in the replay's pool, so comparisons are integer ones.
  std::vector<trace::StringId> cap_name(g.launches.size(), trace::StringPool::kNotInterned);
  std::unordered_map<trace::StringId, std::vector<size_t>> positions;
  for (size_t i = 0; i < g.launches.size(); ++i) {
    if (!g.launches[i].named) continue;
    const auto& ct = captures[g.launches[i].capture].trace;
    const auto& kd = ct.events.kernel_details[ct.events.detail[g.launches[i].row]];
    const trace::StringId id = replay.strings.find(ct.str(kd.kernel));
    cap_name[i] = id;
    if (id != trace::StringPool::kNotInterned) positions[id].push_back(i);
  }
  // Launch geometry where both sides recorded it (HIP launch calls carry grid
  // and block): a same-named kernel launched with another grid is another call.
  auto geometry_agrees = [&](size_t li, uint32_t row) {
    const auto& ct = captures[g.launches[li].capture].trace.events;
    const uint32_t cd = ct.detail[g.launches[li].row];
    const uint32_t rd = e.detail[row];
    if (cd == trace::kNoDetail || rd == trace::kNoDetail) return true;
    const auto& a = ct.kernel_details[cd];
    const auto& b = e.kernel_details[rd];
    const bool known = a.grid[0] > 0 && b.grid[0] > 0;
    return !known || (a.grid == b.grid && a.block == b.block);
  };
  size_t geometry_mismatches = 0;
  std::vector<std::string> graph_sig;
  for (const auto& cg : g.captured_graphs) graph_sig.push_back(signature(g.launches, cg));

  // (launch ts, launch row) → the GPU rows that launch replayed.
  std::map<std::pair<int64_t, int32_t>, std::vector<uint32_t>> by_launch;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (!trace::is_gpu_activity(e.category[r]) || links.launch_of[r] < 0) continue;
    const auto l = static_cast<size_t>(links.launch_of[r]);
    if (!trace::is_graph_launch(replay.name(l))) continue;
    by_launch[{e.ts_ns[l], links.launch_of[r]}].push_back(r);
  }
  g.graph_launches = by_launch.size();

  std::map<int32_t, GraphReplaySummary> summary;  // by captured graph; -1 = names / none
  std::map<int32_t, std::string> tie_notes;
  std::unordered_map<std::string, std::vector<int32_t>> exact_graphs;  // signature → graphs
  for (size_t i = 0; i < graph_sig.size(); ++i)
    exact_graphs[graph_sig[i]].push_back(static_cast<int32_t>(i));
  // Graph node ids, where both traces recorded them: an exact pairing.
  std::unordered_map<int64_t, size_t> launch_by_node;
  for (size_t i = 0; i < g.launches.size(); ++i) {
    const auto& ct = captures[g.launches[i].capture].trace.events;
    const uint32_t d = ct.detail[g.launches[i].row];
    if (d != trace::kNoDetail && ct.kernel_details[d].graph_node_id >= 0)
      launch_by_node.emplace(ct.kernel_details[d].graph_node_id, i);
  }
  auto node_of = [&](uint32_t row) {
    const uint32_t d = e.detail[row];
    return d == trace::kNoDetail ? int64_t{-1} : e.kernel_details[d].graph_node_id;
  };
  size_t cursor = 0;
  int32_t graph_cursor = -1;
  for (auto& [launch, rows] : by_launch) {
    std::sort(rows.begin(), rows.end(),
              [&](uint32_t a, uint32_t b) { return e.ts_ns[a] < e.ts_ns[b]; });
    g.graph_kernels += rows.size();
    size_t matched = 0;
    if (!launch_by_node.empty() && std::all_of(rows.begin(), rows.end(), [&](uint32_t r) {
          return launch_by_node.count(node_of(r)) > 0;
        })) {
      for (uint32_t r : rows) {
        const size_t li = launch_by_node.at(node_of(r));
        g.launch_of_row[r] = static_cast<int32_t>(li);
        g.attributed_to_op += g.launches[li].op >= 0;
      }
      auto& s = summary[g.launches[launch_by_node.at(node_of(rows[0]))].graph];
      s.graph = g.launches[launch_by_node.at(node_of(rows[0]))].graph;
      s.method = "graph node ids";
      ++s.replays;
      s.kernels += rows.size();
      s.attributed += rows.size();
      g.attributed += rows.size();
      continue;
    }
    auto it = positions.find(e.name[rows[0]]);
    if (it != positions.end()) {
      // By kernel name. Candidates from the cursor on first, then wrapping to the start.
      std::vector<size_t> starts;
      const auto& pos = it->second;
      auto from = std::lower_bound(pos.begin(), pos.end(), cursor);
      for (auto p = from; p != pos.end() && starts.size() < kMaxStarts; ++p) starts.push_back(*p);
      for (auto p = pos.begin(); p != from && starts.size() < kMaxStarts; ++p) starts.push_back(*p);
      size_t best = starts.front(), best_score = 0;
      for (size_t s : starts) {
        size_t score = 0;
        for (size_t k = 0; k < std::min(kProbe, rows.size()) && s + k < cap_name.size(); ++k) {
          score += cap_name[s + k] == e.name[rows[k]];
        }
        if (score > best_score) best = s, best_score = score;
        if (best_score == std::min(kProbe, rows.size())) break;
      }
      size_t c = best;
      for (uint32_t r : rows) {
        size_t found = SIZE_MAX;
        for (size_t k = c; k < cap_name.size() && k <= c + kMaxSkip; ++k) {
          if (cap_name[k] != e.name[r]) continue;
          if (!geometry_agrees(k, r)) {
            ++geometry_mismatches;
            continue;
          }
          found = k;
          break;
        }
        if (found == SIZE_MAX) continue;
        g.launch_of_row[r] = static_cast<int32_t>(found);
        ++matched;
        g.attributed_to_op += g.launches[found].op >= 0;
        c = found + 1;
      }
      cursor = c;
      auto& s = summary[-1];
      s.method = "kernel names";
      ++s.replays;
      s.kernels += rows.size();
      s.attributed += matched;
      if (matched < rows.size() && s.reason.empty())
        s.reason =
            "some replayed kernels have no captured launch of the same name within 32 launches";
      g.attributed += matched;
      continue;
    }
    // By launch order, against the captured graph with the same sequence of work kinds.
    const std::string sig = signature(e, rows);
    int32_t chosen = -1;
    std::vector<std::pair<size_t, size_t>> pairs;
    if (auto ex = exact_graphs.find(sig); ex != exact_graphs.end()) {
      const auto& cands = ex->second;
      auto next = std::upper_bound(cands.begin(), cands.end(), graph_cursor);
      chosen = next != cands.end() ? *next : cands.front();
      if (cands.size() > 1) {
        tie_notes[chosen] = fmt::format(
            "{} captured graphs launch the same sequence of {} kernels/memsets/copies; replays "
            "were "
            "assigned to them in capture order (shapes may be another capture's)",
            cands.size(), rows.size());
      }
      for (size_t k = 0; k < rows.size(); ++k) pairs.emplace_back(k, k);
    } else {
      size_t best = 0;
      for (size_t gi = 0; gi < graph_sig.size(); ++gi) {
        auto p = walk_by_kind(sig, graph_sig[gi]);
        if (p.size() > best)
          best = p.size(), chosen = static_cast<int32_t>(gi), pairs = std::move(p);
      }
      if (best * 2 < rows.size()) chosen = -1, pairs.clear();
    }
    auto& s = summary[chosen];
    s.graph = chosen;
    ++s.replays;
    s.kernels += rows.size();
    if (chosen < 0) {
      s.method = "none";
      s.reason = g.captured_graphs.empty()
                     ? "no captured launches: the capture trace holds no launch calls whose work "
                       "did not run"
                     : "no captured graph has this replay's sequence of kernels/memsets/copies";
      continue;
    }
    graph_cursor = chosen;
    s.method = "launch order";
    const CapturedGraph& cg = g.captured_graphs[static_cast<size_t>(chosen)];
    for (auto [r, k] : pairs) {
      const size_t li = cg.first + k;
      g.launch_of_row[rows[r]] = static_cast<int32_t>(li);
      ++matched;
      g.attributed_to_op += g.launches[li].op >= 0;
    }
    s.attributed += matched;
    g.attributed += matched;
    if (matched < rows.size()) {
      s.reason =
          fmt::format("the replay runs {} GPU events, the captured graph launched {}; {} left",
                      rows.size(), cg.count, rows.size() - matched);
    }
  }
  for (auto& [gi, s] : summary) {
    if (auto t = tie_notes.find(gi); t != tie_notes.end())
      s.reason = s.reason.empty() ? t->second : s.reason + "; " + t->second;
    g.graphs.push_back(std::move(s));
  }

  if (g.graph_kernels > 0 && g.launches.empty()) {
    g.warnings.push_back(
        "the capture traces hold no captured launches (no launch calls with args.kernel, and no "
        "cudaLaunchKernel/cudaMemsetAsync calls whose work did not run): they do not match this "
        "replay (record the graph-capture trace of the same run, e.g. vLLM "
        "--profiler-config.capture_torch_profiler_dir)");
  } else if (g.graph_kernels > 0 && g.attributed * 2 < g.graph_kernels) {
    g.warnings.push_back(fmt::format(
        "only {} of {} graph-replayed kernels matched a captured launch: the capture traces may "
        "come from another run, model or graph size",
        g.attributed, g.graph_kernels));
  }
  if (geometry_mismatches > 0) {
    g.warnings.push_back(fmt::format(
        "{} time(s) a captured launch of the same kernel name had another grid/block than the "
        "replayed kernel and was passed over",
        geometry_mismatches));
  }
  if (unnamed_outside > 0) {
    g.warnings.push_back(fmt::format(
        "{} launch call(s) of the capture traces lie outside every Begin/EndCapture window and "
        "launched no GPU work in the trace; they were not used",
        unnamed_outside));
  }
  return g;
}

}  // namespace magpie::analysis
