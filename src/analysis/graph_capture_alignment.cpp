#include "analysis/graph_capture_alignment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace magpie::analysis {

using trace::Category;

namespace {

constexpr size_t kProbe = 16;    // kernels compared when choosing where a graph starts
constexpr size_t kMaxSkip = 32;  // captured launches a replay may skip (not captured work)
constexpr size_t kMaxStarts = 256;

}  // namespace

std::vector<CapturedLaunch> captured_launches(const CaptureTrace& c, uint32_t index) {
  const auto& e = c.trace.events;
  std::unordered_map<int64_t, int32_t> op_by_ext;
  for (size_t r = 0; r < e.size(); ++r) {
    if (e.category[r] == Category::kCpuOp && e.external_id[r] != trace::kNoValue) {
      op_by_ext.emplace(e.external_id[r], static_cast<int32_t>(r));
    }
  }
  std::vector<CapturedLaunch> out;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (!trace::is_launch_api(e.category[r]) || e.detail[r] == trace::kNoDetail) continue;
    if (e.kernel_details[e.detail[r]].kernel == trace::kEmptyString) continue;
    CapturedLaunch l{index, r, -1};
    if (auto it = op_by_ext.find(e.external_id[r]);
        e.external_id[r] != trace::kNoValue && it != op_by_ext.end()) {
      l.op = it->second;
    } else {
      for (int32_t p = c.links.parent[r]; p >= 0; p = c.links.parent[static_cast<size_t>(p)]) {
        if (e.category[static_cast<size_t>(p)] == Category::kCpuOp) {
          l.op = p;
          break;
        }
      }
    }
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
  for (uint32_t i = 0; i < captures.size(); ++i) {
    auto l = captured_launches(captures[i], i);
    g.launches.insert(g.launches.end(), l.begin(), l.end());
  }
  // Kernel names as ids in the replay's pool, so comparisons are integer ones.
  std::vector<trace::StringId> cap_name(g.launches.size());
  std::unordered_map<trace::StringId, std::vector<size_t>> positions;
  for (size_t i = 0; i < g.launches.size(); ++i) {
    const auto& ct = captures[g.launches[i].capture].trace;
    const auto& kd = ct.events.kernel_details[ct.events.detail[g.launches[i].row]];
    const trace::StringId id = replay.strings.find(ct.str(kd.kernel));
    cap_name[i] = id;
    if (id != trace::StringPool::kNotInterned) positions[id].push_back(i);
  }

  // (launch ts, launch row) → the GPU rows that launch replayed.
  std::map<std::pair<int64_t, int32_t>, std::vector<uint32_t>> by_launch;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (!trace::is_gpu_activity(e.category[r]) || links.launch_of[r] < 0) continue;
    const auto l = static_cast<size_t>(links.launch_of[r]);
    if (!trace::is_graph_launch(replay.name(l))) continue;
    by_launch[{e.ts_ns[l], links.launch_of[r]}].push_back(r);
  }
  g.graph_launches = by_launch.size();
  size_t cursor = 0;
  for (auto& [launch, rows] : by_launch) {
    std::sort(rows.begin(), rows.end(),
              [&](uint32_t a, uint32_t b) { return e.ts_ns[a] < e.ts_ns[b]; });
    g.graph_kernels += rows.size();
    auto it = positions.find(e.name[rows[0]]);
    if (it == positions.end()) continue;
    // Candidates from the cursor on first, then wrapping to the start.
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
        if (cap_name[k] == e.name[r]) {
          found = k;
          break;
        }
      }
      if (found == SIZE_MAX) continue;
      g.launch_of_row[r] = static_cast<int32_t>(found);
      ++g.attributed;
      g.attributed_to_op += g.launches[found].op >= 0;
      c = found + 1;
    }
    cursor = c;
  }
  if (g.graph_kernels > 0 && g.launches.empty()) {
    g.warnings.push_back(
        "the capture traces hold no kernel launches with args.kernel: they do not match this "
        "replay (record the graph-capture trace of the same run, e.g. vLLM "
        "--profiler-config.capture_torch_profiler_dir)");
  } else if (g.graph_kernels > 0 && g.attributed * 2 < g.graph_kernels) {
    g.warnings.push_back(fmt::format(
        "only {} of {} graph-replayed kernels matched a captured launch: the capture traces may "
        "come from another run, model or graph size",
        g.attributed, g.graph_kernels));
  }
  return g;
}

}  // namespace magpie::analysis
