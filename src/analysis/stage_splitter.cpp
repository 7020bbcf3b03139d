#include "analysis/stage_splitter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/gpu_timeline.hpp"
#include "analysis/perf_model.hpp"

namespace magpie::analysis {

using trace::Category;
using trace::Phase;
using trace::Trace;
using trace::TraceLinks;

namespace {

bool is_span(const Trace& t, size_t r) { return t.events.phase[r] == Phase::kComplete; }

// Engine grammars outrank ProfilerStep#N: a profiler step may wrap several
// engine steps, and only the engine knows their stage.
struct Marker {
  uint32_t row;
  StepAnnotation step;
};

std::vector<Marker> find_markers(const Trace& t) {
  std::vector<Marker> engine, profiler;
  const auto& e = t.events;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (e.category[r] != Category::kUserAnnotation || !is_span(t, r)) continue;
    auto step = parse_step_annotation(t.name(r));
    if (!step) continue;
    (step->grammar == "profiler_step" ? profiler : engine).push_back({r, std::move(*step)});
  }
  std::vector<Marker> markers = engine.empty() ? std::move(profiler) : std::move(engine);
  std::sort(markers.begin(), markers.end(), [&](const Marker& a, const Marker& b) {
    if (e.ts_ns[a.row] != e.ts_ns[b.row]) return e.ts_ns[a.row] < e.ts_ns[b.row];
    return e.dur_ns[a.row] > e.dur_ns[b.row];
  });
  // Keep the outermost of nested markers (SGLang traces may carry both its own
  // step[...] and a vLLM-style execute_... for the same step).
  std::vector<Marker> kept;
  int64_t covered_until = INT64_MIN;
  for (auto& m : markers) {
    if (e.ts_ns[m.row] < covered_until) continue;
    covered_until = e.end_ns(m.row);
    kept.push_back(std::move(m));
  }
  return kept;
}

// The thread that launches the most GPU work: the engine's model runner.
std::pair<int64_t, int64_t> main_thread(const Trace& t, const TraceLinks& links) {
  std::map<std::pair<int64_t, int64_t>, size_t> launches;
  for (size_t r = 0; r < t.events.size(); ++r) {
    if (links.launch_of[r] < 0) continue;
    auto l = static_cast<size_t>(links.launch_of[r]);
    ++launches[{t.events.pid[l], t.events.tid[l]}];
  }
  std::pair<int64_t, int64_t> best{INT64_MIN, INT64_MIN};
  size_t most = 0;
  for (const auto& [key, n] : launches) {
    if (n > most) best = key, most = n;
  }
  return best;
}

// Top-level cpu_ops of the main thread, in time order.
std::vector<uint32_t> top_level_ops(const Trace& t, const TraceLinks& links,
                                    std::pair<int64_t, int64_t> thread) {
  std::vector<uint32_t> out;
  const auto& e = t.events;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (e.category[r] != Category::kCpuOp || !is_span(t, r) || links.parent[r] >= 0) continue;
    if (e.pid[r] != thread.first || e.tid[r] != thread.second) continue;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(),
            [&](uint32_t a, uint32_t b) { return e.ts_ns[a] < e.ts_ns[b]; });
  return out;
}

// The op that starts an iteration: what annotated steps start with, else
// aten::embedding, else the first op of the shortest period with which the
// top-level op sequence repeats (≥ 90% of positions agree, ≥ 2 periods).
std::string iteration_start_op(const Trace& t, const TraceLinks& links,
                               const std::vector<Marker>& markers,
                               const std::vector<uint32_t>& top) {
  const auto& e = t.events;
  std::map<std::string, size_t> first_children;
  if (!markers.empty()) {
    std::unordered_map<uint32_t, uint32_t> first_child;  // marker row → earliest child op
    for (uint32_t r = 0; r < e.size(); ++r) {
      if (e.category[r] != Category::kCpuOp || links.parent[r] < 0) continue;
      auto p = static_cast<uint32_t>(links.parent[r]);
      auto [it, inserted] = first_child.emplace(p, r);
      if (!inserted && e.ts_ns[r] < e.ts_ns[it->second]) it->second = r;
    }
    for (const auto& m : markers) {
      if (auto it = first_child.find(m.row); it != first_child.end()) {
        ++first_children[std::string(t.name(it->second))];
      }
    }
    if (!first_children.empty()) {
      return std::max_element(first_children.begin(), first_children.end(),
                              [](auto& a, auto& b) { return a.second < b.second; })
          ->first;
    }
  }
  for (uint32_t r : top) {
    if (t.name(r) == "aten::embedding") return "aten::embedding";
  }
  // Bounded so that a long trace without embeddings stays linear-ish.
  const size_t n = std::min<size_t>(top.size(), 20000);
  for (size_t period = 2; period * 2 <= n && period <= 4096; ++period) {
    size_t agree = 0;
    for (size_t i = 0; i + period < n; ++i) agree += e.name[top[i]] == e.name[top[i + period]];
    if (agree * 10 >= (n - period) * 9) return std::string(t.name(top[0]));
  }
  return {};
}

// Time order, busy time (union of intervals) and span of an iteration's GPU work.
void finish_gpu_rows(const Trace& t, Iteration& it) {
  const auto& e = t.events;
  std::sort(it.gpu_rows.begin(), it.gpu_rows.end(),
            [&](uint32_t a, uint32_t b) { return e.ts_ns[a] < e.ts_ns[b]; });
  std::vector<Interval> iv;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (uint32_t r : it.gpu_rows) {
    iv.emplace_back(e.ts_ns[r], e.end_ns(r));
    lo = std::min(lo, e.ts_ns[r]);
    hi = std::max(hi, e.end_ns(r));
  }
  it.gpu_busy_us = static_cast<double>(merge_intervals(iv)) / 1e3;
  it.gpu_duration_us = iv.empty() ? 0.0 : static_cast<double>(hi - lo) / 1e3;
}

void assign_gpu_rows(const Trace& t, const TraceLinks& links, std::vector<Iteration>& its) {
  const auto& e = t.events;
  std::vector<int64_t> starts;
  for (const auto& it : its) starts.push_back(it.start_ns);
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (!trace::is_gpu_activity(e.category[r])) continue;
    const int32_t l = links.launch_of[r];
    const int64_t when = l >= 0 ? e.ts_ns[static_cast<size_t>(l)] : e.ts_ns[r];
    auto pos = std::upper_bound(starts.begin(), starts.end(), when) - starts.begin();
    if (pos == 0) continue;
    auto& it = its[static_cast<size_t>(pos - 1)];
    if (when <= it.end_ns) it.gpu_rows.push_back(r);
  }
  for (auto& it : its) finish_gpu_rows(t, it);
}

StagePick pick_for(Stage stage, const std::vector<Iteration>& its, size_t num_steps) {
  std::vector<size_t> cand;
  for (size_t i = 0; i < its.size(); ++i) {
    if (its[i].stage == stage && !its[i].gpu_rows.empty()) cand.push_back(i);
  }
  StagePick p;
  p.stage = stage;
  const size_t found = cand.size();
  if (num_steps > 0 && cand.size() > num_steps) {
    cand.erase(cand.begin(), cand.end() - static_cast<std::ptrdiff_t>(num_steps));
  }
  p.candidates = cand.size();
  if (cand.empty()) return p;
  double max_bs = 0;
  for (size_t i : cand) max_bs = std::max(max_bs, its[i].step.batch_size);
  std::erase_if(cand, [&](size_t i) { return its[i].step.batch_size != max_bs; });
  std::string reason =
      fmt::format("largest batch size ({:g}) among {} {} iteration(s) with GPU work", max_bs,
                  p.candidates, to_string(stage));
  if (found > p.candidates) {
    reason += fmt::format(" (the last {} of {}: num_steps)", p.candidates, found);
  }
  // Median GPU busy time: a typical iteration, not a warm-up or a straggler.
  std::stable_sort(cand.begin(), cand.end(),
                   [&](size_t a, size_t b) { return its[a].gpu_busy_us < its[b].gpu_busy_us; });
  p.iteration = cand[cand.size() / 2];
  reason += fmt::format("; median gpu_busy_duration of {} tie(s)", cand.size());
  p.selection_reason = std::move(reason);
  return p;
}

}  // namespace

namespace {

// aten::embedding rows in time order: the token-id inputs of forward passes.
std::vector<uint32_t> embedding_rows(const Trace& t) {
  const auto& e = t.events;
  const trace::StringId name = t.strings.find("aten::embedding");
  std::vector<uint32_t> rows;
  if (name == trace::StringPool::kNotInterned) return rows;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (e.name[r] == name && e.category[r] == Category::kCpuOp) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(),
            [&](uint32_t a, uint32_t b) { return e.ts_ns[a] < e.ts_ns[b]; });
  return rows;
}

TokenGuess guess_from(const Trace& t, const std::vector<uint32_t>& emb, int64_t start_ns,
                      int64_t end_ns) {
  const auto& e = t.events;
  TokenGuess g;
  g.why = "no aten::embedding with recorded shapes in the window";
  auto it = std::lower_bound(emb.begin(), emb.end(), start_ns,
                             [&](uint32_t r, int64_t ts) { return e.ts_ns[r] < ts; });
  for (; it != emb.end() && e.ts_ns[*it] < end_ns; ++it) {
    const uint32_t r = *it;
    if (e.detail[r] == trace::kNoDetail) continue;
    const auto& dims = e.op_details[e.detail[r]].args.dims;
    if (!dims || dims->size() < 2) continue;
    const auto& ids = (*dims)[1];
    if (ids.size() == 2 && ids[0] > 0 && ids[1] > 0) {
      g.stage = ids[1] > 1 ? Stage::kPrefill : Stage::kDecode;
      g.batch = ids[0];
      g.tokens = ids[0] * ids[1];
      g.why = fmt::format("token ids [{}, {}] in aten::embedding", ids[0], ids[1]);
    } else {
      g.why = "flattened token ids in aten::embedding: prefill and decode look alike";
    }
    break;
  }
  return g;
}

}  // namespace

Iteration whole_trace_iteration(const Trace& t) {
  Iteration it;
  it.step.grammar = "whole_trace";
  it.marker = "whole trace";
  it.stage_source = "no iteration has a stage";
  const auto& e = t.events;
  it.start_ns = INT64_MAX;
  it.end_ns = INT64_MIN;
  for (uint32_t r = 0; r < e.size(); ++r) {
    if (!trace::is_gpu_activity(e.category[r])) continue;
    it.gpu_rows.push_back(r);
    it.start_ns = std::min(it.start_ns, e.ts_ns[r]);
    it.end_ns = std::max(it.end_ns, e.end_ns(r));
  }
  if (it.gpu_rows.empty()) it.start_ns = it.end_ns = 0;
  finish_gpu_rows(t, it);
  return it;
}

TokenGuess guess_stage_from_tokens(const Trace& t, int64_t start_ns, int64_t end_ns) {
  return guess_from(t, embedding_rows(t), start_ns, end_ns);
}

StageSplit split_stages(const Trace& t, const TraceLinks& links, size_t num_steps) {
  StageSplit out;
  const auto& e = t.events;
  std::vector<Marker> markers = find_markers(t);
  std::vector<Iteration> its;
  for (const auto& m : markers) {
    Iteration it;
    it.step = m.step;
    it.stage = m.step.stage;
    it.marker = std::string(t.name(m.row));
    it.stage_source = "annotation";
    it.start_ns = e.ts_ns[m.row];
    it.end_ns = e.end_ns(m.row);
    its.push_back(std::move(it));
  }

  // Fallback and gap filling: forward passes outside any annotated step (the
  // H200 Llama trace's unannotated prefill; traces without annotations).
  const auto thread = main_thread(t, links);
  const auto top = top_level_ops(t, links, thread);
  const std::string start_op = iteration_start_op(t, links, markers, top);
  size_t pattern_found = 0;
  if (!start_op.empty()) {
    std::vector<std::pair<int64_t, int64_t>> annotated;
    for (const auto& it : its) annotated.emplace_back(it.start_ns, it.end_ns);
    auto inside_annotation = [&](int64_t ts) {
      auto pos = std::upper_bound(annotated.begin(), annotated.end(), std::pair{ts, INT64_MAX});
      return pos != annotated.begin() && ts <= std::prev(pos)->second;
    };
    auto next_annotation = [&](int64_t ts) {
      auto pos = std::upper_bound(annotated.begin(), annotated.end(), std::pair{ts, INT64_MAX});
      return pos == annotated.end() ? INT64_MAX : pos->first;
    };
    std::vector<Iteration> found;
    for (uint32_t r : top) {
      const int64_t ts = e.ts_ns[r];
      if (inside_annotation(ts)) continue;
      if (t.name(r) == start_op) {
        Iteration it;
        it.step.grammar = "pattern";
        it.marker = start_op;
        it.start_ns = ts;
        it.end_ns = e.end_ns(r);
        found.push_back(std::move(it));
      } else if (!found.empty() && ts < next_annotation(found.back().start_ns)) {
        found.back().end_ns = std::max(found.back().end_ns, e.end_ns(r));
      }
    }
    pattern_found = found.size();
    for (auto& it : found) its.push_back(std::move(it));
  }
  if (its.empty() && !top.empty()) {
    Iteration it;
    it.step.grammar = "whole_trace";
    it.marker = "whole trace";
    it.start_ns = e.ts_ns[top.front()];
    for (uint32_t r : top) it.end_ns = std::max(it.end_ns, e.end_ns(r));
    its.push_back(std::move(it));
    out.warnings.push_back(
        "no step annotations and no repeating op pattern: the whole trace is treated as one "
        "iteration. For stage reports, profile with the engine's step annotations (vLLM "
        "--profiler-config.detailed_trace_annotation=True; SGLang's step[...] markers)");
  }
  std::sort(its.begin(), its.end(),
            [](const Iteration& a, const Iteration& b) { return a.start_ns < b.start_ns; });

  size_t unknown = 0;
  const std::vector<uint32_t> emb = embedding_rows(t);
  for (auto& it : its) {
    if (it.stage != Stage::kUnknown && it.step.batch_size > 0) continue;
    TokenGuess g = guess_from(t, emb, it.start_ns, it.end_ns);
    if (it.stage == Stage::kUnknown) {
      it.stage = g.stage;
      it.stage_source = g.why;
    }
    if (it.step.batch_size == 0 && g.batch > 0) it.step.batch_size = static_cast<double>(g.batch);
    if (it.step.tokens == 0) it.step.tokens = g.tokens;
    unknown += it.stage == Stage::kUnknown;
  }
  assign_gpu_rows(t, links, its);

  std::string grammars;
  for (const auto& m : markers) {
    if (grammars.find(m.step.grammar) == std::string::npos) {
      grammars += (grammars.empty() ? "" : ",") + m.step.grammar;
    }
  }
  out.method = markers.empty() ? "" : "annotations (" + grammars + ")";
  if (pattern_found > 0) {
    out.method += fmt::format("{}op pattern (iterations start at {})",
                              out.method.empty() ? "" : " + ", start_op);
  }
  if (out.method.empty()) out.method = "whole trace";
  if (markers.empty()) {
    out.warnings.push_back(
        "no engine step annotations (vLLM execute_..., SGLang step[...], ATOM prefill/decode[...]) "
        "found; iterations were inferred from the op sequence and staged from token-id shapes");
  }
  if (unknown > 0) {
    out.warnings.push_back(fmt::format(
        "{} iteration(s) have no stage: no recognised annotation and no [batch, seq] token ids; "
        "they are left out of the stage reports (--mode pytorch reports the whole trace)",
        unknown));
  }
  for (Stage s : {Stage::kPrefillDecode, Stage::kDecode, Stage::kPrefill}) {
    StagePick p = pick_for(s, its, num_steps);
    if (p.candidates > 0) out.picks.push_back(std::move(p));
  }
  out.iterations = std::move(its);
  return out;
}

}  // namespace magpie::analysis
