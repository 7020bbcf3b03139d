// plan_replay: attribute the trace's GPU work to CPU ops, group the ops by
// recorded signature (name + shape args), select, and prepare each selected
// op's module.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "analysis/op_attribution.hpp"
#include "analysis/perf_model.hpp"
#include "core/error.hpp"
#include "replay/bench_module.hpp"
#include "replay/replay.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::replay {
namespace {

using trace::Category;
using trace::StringId;
using SignatureKey = std::tuple<StringId, StringId, StringId, StringId, StringId>;

SignatureKey key_of(const trace::Trace& t, size_t row) {
  const uint32_t d = t.events.detail[row];
  if (d == trace::kNoDetail || d >= t.events.op_details.size()) {
    return {t.events.name[row], trace::kEmptyString, trace::kEmptyString, trace::kEmptyString,
            trace::kEmptyString};
  }
  const auto& od = t.events.op_details[d];
  return {t.events.name[row], od.input_dims, od.input_type, od.input_strides, od.concrete_inputs};
}

// The args as one-line JSON (traces pretty-print them over many lines).
std::string compact(std::string_view raw) {
  if (raw.empty()) return {};
  auto j = nlohmann::json::parse(raw, nullptr, false);
  return j.is_discarded() ? std::string(raw) : j.dump();
}

OpSignature signature_of(const trace::Trace& t, const SignatureKey& k) {
  return {std::string(t.str(std::get<0>(k))), compact(t.str(std::get<1>(k))),
          compact(t.str(std::get<2>(k))), compact(t.str(std::get<3>(k))),
          compact(t.str(std::get<4>(k)))};
}

RecordedArgs recorded_args(const OpSignature& s) {
  return {s.input_dims, s.input_type, s.input_strides, s.concrete_inputs};
}

struct Group {
  SignatureKey key;
  OpCost cost;
  size_t first_row = 0;
  std::map<std::string, KernelCost> kernels;
  std::vector<int32_t> owners;  // op rows that launched GPU work (deduplicated at the end)
};

bool matches(const OpQuery& q, const OpSignature& s) {
  if (q.name != s.name) return false;
  if (!q.shapes) return true;
  auto parsed = parse_op_arguments(recorded_args(s));
  return parsed.error.empty() && shapes_match(parsed.arguments, *q.shapes);
}

std::string slug_for(int rank, std::string_view name) {
  std::string s = fmt::format("{:02d}_", rank);
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  while (s.find("__") != std::string::npos) s.replace(s.find("__"), 2, "_");
  return s;
}

// The roofline floor of one call, only where the perf model's "every operand
// read once, the output written once" is a true lower bound: ops that read all
// of every input (GEMM, norm, softmax, elementwise, reductions), on dense
// layouts (a broadcast stride-0 tensor holds fewer bytes than its shape says).
// Attention (causal masking skips work), embedding and index ops get none.
void roofline_floor(ReplayTarget& t) {
  const auto f = t.op->family;
  if (f == OpFamily::kAttention || f == OpFamily::kEmbedding || f == OpFamily::kDataMovement)
    return;
  for (const auto& a : t.arguments) {
    if (a.kind == ArgumentKind::kTensorList) return;
    if (a.kind != ArgumentKind::kTensor) continue;
    int64_t extent = 1;
    for (size_t i = 0; i < a.tensor.shape.size() && i < a.tensor.strides.size(); ++i) {
      if (a.tensor.shape[i] > 1 && a.tensor.strides[i] == 0) return;
      extent += (a.tensor.shape[i] - 1) * a.tensor.strides[i];
    }
    if (!a.tensor.strides.empty() && a.tensor.numel() > 0 && extent != a.tensor.numel())
      return;  // gaps or overlap
  }
  auto dims = analysis::parse_input_dims(t.signature.input_dims);
  if (!dims) return;
  auto cost = analysis::model_for_op(t.signature.name, *dims,
                                     analysis::parse_input_types(t.signature.input_type),
                                     t.signature.concrete_inputs);
  if (!cost || cost->bytes <= 0) return;
  t.min_bytes = cost->bytes;
  t.min_flops = cost->flops;
}

std::string ms(int64_t ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); }

}  // namespace

OpQuery parse_op_query(std::string_view text) {
  OpQuery q;
  q.text = std::string(text);
  std::string_view name = text;
  const auto bracket = text.find('[');
  if (bracket != std::string_view::npos) {
    if (bracket == 0 || text[bracket - 1] != ':') {
      throw Error(
          ErrorKind::kUsage,
          fmt::format("--op \"{}\": write NAME:SHAPES, e.g. aten::mm:[[16,4096],[4096,4096]]",
                      text));
    }
    name = text.substr(0, bracket - 1);
    auto shapes = parse_shape_filter(text.substr(bracket));
    if (!shapes) {
      throw Error(
          ErrorKind::kUsage,
          fmt::format(
              "--op \"{}\": SHAPES must be a JSON list of shapes, e.g. [[16,4096],[4096,4096]]",
              text));
    }
    q.shapes = std::move(*shapes);
  }
  if (name.empty() || name.find_first_of(" \t[]") != std::string_view::npos) {
    throw Error(ErrorKind::kUsage,
                fmt::format("--op \"{}\": expected an op name such as aten::mm", text));
  }
  q.name =
      name.find("::") == std::string_view::npos ? "aten::" + std::string(name) : std::string(name);
  return q;
}

namespace {

// Kernel time says what the GPU spends; the critical path says what a faster
// kernel would buy end to end (nothing, on a launch-bound decode step).
void rank_by_end_to_end_gain(const trace::Trace& trace, const trace::TraceLinks& links,
                             ReplayOutcome& out) {
  // Per signature (name and recorded Input Dims), as the replay's targets are:
  // a decode GEMM and a prefill GEMM of one op name buy different gains.
  auto key = [](const auto& sig) {
    return sig.input_dims.empty() ? sig.name : sig.name + ":" + sig.input_dims;
  };
  std::vector<std::string> names;
  for (const auto& t : out.targets) names.push_back(key(t.signature));
  for (const auto& k : out.skipped) names.push_back(key(k.signature));
  try {
    out.critical_path = analysis::summarize_critical_path(trace, links, 10, 10, names);
  } catch (const std::exception& e) {
    out.warnings.push_back(std::string("no end-to-end ranking: the critical path failed: ") + e.what());
    return;
  }
  if (!out.critical_path) return;
  auto gain_of = [&](const std::string& op) -> std::optional<int64_t> {
    for (const auto& [name, gain] : out.critical_path->named_gpu_gains)
      if (name == op) return gain;
    return std::nullopt;
  };
  for (const auto& t : out.targets)
    out.by_end_to_end_gain.push_back({t.rank, t.signature.name, t.signature.input_dims, t.cost.total_ns,
                                      gain_of(key(t.signature))});
  for (const auto& k : out.skipped)
    out.by_end_to_end_gain.push_back({k.rank, k.signature.name, k.signature.input_dims, k.cost.total_ns,
                                      gain_of(key(k.signature))});
  std::stable_sort(out.by_end_to_end_gain.begin(), out.by_end_to_end_gain.end(),
                   [](const EndToEndRank& a, const EndToEndRank& b) {
                     const int64_t ga = a.gain_ns.value_or(-1), gb = b.gain_ns.value_or(-1);
                     return ga != gb ? ga > gb : a.kernel_rank < b.kernel_rank;
                   });
}

}  // namespace

ReplayOutcome plan_replay(const trace::Trace& trace, const ReplayRequest& request) {
  if (request.ops.empty() && request.top_k <= 0) {
    throw Error(ErrorKind::kUsage, "nothing to replay: give --op NAME[:SHAPES] or --top-k N");
  }
  ReplayOutcome out;
  out.trace_path = trace.path;
  const bool by_name = !request.ops.empty();
  if (by_name) {
    std::vector<std::string> names;
    for (const auto& q : request.ops) names.push_back(q.text);
    out.selection = fmt::format(
        "--op {}{}", fmt::join(names, " --op "),
        request.top_k > 0 ? fmt::format(" (top {} signatures each)", request.top_k) : "");
  } else {
    out.selection = fmt::format("top {} ops by GPU time", request.top_k);
  }

  const auto& links = trace::links_of(trace);
  const auto& ev = trace.events;
  std::vector<uint32_t> gpu_rows;
  for (size_t r = 0; r < ev.size(); ++r) {
    if (trace::is_gpu_activity(ev.category[r]) && ev.phase[r] == trace::Phase::kComplete) {
      gpu_rows.push_back(static_cast<uint32_t>(r));
      out.trace_gpu_ns += ev.dur_ns[r];
    }
  }

  // Whether a row is one of the wanted ops, memoised by signature (parsing
  // the shape filter once per signature, not per call).
  std::map<SignatureKey, bool> wanted_cache;
  auto wanted = [&](size_t row) {
    const auto key = key_of(trace, row);
    auto it = wanted_cache.find(key);
    if (it != wanted_cache.end()) return it->second;
    bool w = false;
    if (by_name) {
      const auto sig = signature_of(trace, key);
      w = std::ranges::any_of(request.ops, [&](const OpQuery& q) { return matches(q, sig); });
    } else {
      w = find_op(trace.name(row)) != nullptr;
    }
    wanted_cache.emplace(key, w);
    return w;
  };

  analysis::AttributionSources sources{&trace, &links, nullptr, nullptr};
  const auto owners = analysis::attribute_kernels(sources, gpu_rows, [&](analysis::OpRef r) {
    return ev.category[static_cast<size_t>(r.row)] == Category::kCpuOp &&
           wanted(static_cast<size_t>(r.row));
  });

  std::map<SignatureKey, Group> groups;
  std::map<std::string, int64_t> leaf_time;  // for the not-found message
  for (const auto& k : owners) {
    const int64_t dur = ev.dur_ns[k.gpu_row];
    if (k.graph_launch >= 0) {
      ++out.graph_replayed_kernels;
      continue;
    }
    if (!k.op.valid()) {
      out.unattributed_ns += dur;
      continue;
    }
    const auto row = static_cast<size_t>(k.op.row);
    leaf_time[std::string(trace.name(static_cast<size_t>(k.leaf.row)))] += dur;
    if (by_name && !wanted(row)) continue;
    const auto key = key_of(trace, row);
    auto& g = groups[key];
    g.key = key;
    g.cost.total_ns += dur;
    g.cost.kernel_count += 1;
    auto& kc = g.kernels[std::string(trace.name(k.gpu_row))];
    kc.count += 1;
    kc.total_ns += dur;
    g.owners.push_back(k.op.row);
  }
  if (out.graph_replayed_kernels > 0) {
    out.warnings.push_back(
        fmt::format("{} GPU events were replayed from CUDA/HIP graphs and are not attributed to "
                    "ops: record the trace with "
                    "graphs off (e.g. vLLM --enforce-eager) to replay them",
                    out.graph_replayed_kernels));
  }

  // A trace without GPU work (a CPU run): rank the innermost replayable ops
  // by their host time instead, the same "nearest wanted op" rule from below.
  out.ranked_by_host_time = !by_name && out.trace_gpu_ns == 0;
  if (out.ranked_by_host_time) {
    std::vector<char> has_wanted_inside(ev.size(), 0);
    for (size_t r = 0; r < ev.size(); ++r) {
      if (ev.category[r] != Category::kCpuOp || !wanted(r)) continue;
      for (int32_t p = links.parent[r]; p >= 0; p = links.parent[static_cast<size_t>(p)]) {
        if (ev.category[static_cast<size_t>(p)] == Category::kCpuOp &&
            wanted(static_cast<size_t>(p))) {
          has_wanted_inside[static_cast<size_t>(p)] = 1;
          break;
        }
      }
    }
    for (size_t r = 0; r < ev.size(); ++r) {
      if (ev.category[r] != Category::kCpuOp || !wanted(r) || has_wanted_inside[r]) continue;
      auto& g = groups[key_of(trace, r)];
      g.key = key_of(trace, r);
    }
  }

  // Calls: every cpu_op of a selected signature (with --op, also calls that launched nothing).
  for (size_t r = 0; r < ev.size(); ++r) {
    if (ev.category[r] != Category::kCpuOp) continue;
    const auto key = key_of(trace, r);
    auto it = groups.find(key);
    if (it == groups.end()) {
      if (!by_name || !wanted(r)) continue;
      it = groups.emplace(key, Group{}).first;
      it->second.key = key;
      it->second.first_row = r;
    } else if (it->second.cost.calls == 0) {
      it->second.first_row = r;
    }
    it->second.cost.calls += 1;
    it->second.cost.cpu_total_ns += ev.dur_ns[r];
  }

  std::vector<Group*> ranked;
  for (auto& [key, g] : groups) {
    std::ranges::sort(g.owners);
    g.cost.calls_with_gpu_work = std::unique(g.owners.begin(), g.owners.end()) - g.owners.begin();
    for (auto& [name, kc] : g.kernels) {
      kc.name = name;
      g.cost.kernels.push_back(kc);
    }
    std::ranges::sort(g.cost.kernels, [](const KernelCost& a, const KernelCost& b) {
      return std::tie(b.total_ns, a.name) < std::tie(a.total_ns, b.name);
    });
    ranked.push_back(&g);
  }
  const bool host = out.ranked_by_host_time;
  auto time_of = [host](const Group* g) { return host ? g->cost.cpu_total_ns : g->cost.total_ns; };
  std::ranges::sort(ranked, [&](const Group* a, const Group* b) {
    return std::tuple(time_of(b), b->cost.calls, a->first_row) <
           std::tuple(time_of(a), a->cost.calls, b->first_row);
  });

  std::vector<Group*> selected;
  if (by_name) {
    for (const auto& q : request.ops) {
      int taken = 0;
      for (auto* g : ranked) {
        if (!matches(q, signature_of(trace, g->key))) continue;
        if (request.top_k > 0 && taken >= request.top_k) break;
        if (std::ranges::find(selected, g) == selected.end()) selected.push_back(g);
        ++taken;
      }
      if (taken == 0) {
        std::vector<std::pair<int64_t, std::string>> top;
        for (const auto& [n, t] : leaf_time) top.emplace_back(t, n);
        std::ranges::sort(top, std::greater<>());
        std::vector<std::string> names;
        for (size_t i = 0; i < top.size() && i < 8; ++i)
          names.push_back(fmt::format("{} ({})", top[i].second, ms(top[i].first)));
        throw Error(
            ErrorKind::kNotFound,
            fmt::format("no {} call{} in the trace", q.name, q.shapes ? " with those shapes" : ""),
            trace.path, std::nullopt,
            names.empty()
                ? "check the name (e.g. aten::mm)"
                : fmt::format("ops that launched the most GPU work: {}", fmt::join(names, ", ")));
      }
    }
    std::ranges::stable_sort(selected, [](const Group* a, const Group* b) {
      return a->cost.total_ns > b->cost.total_ns;
    });
  } else {
    if (ranked.empty()) {
      throw Error(ErrorKind::kNoGpuEvents,
                  "no replayable CPU op and no GPU work attributed to one: nothing to rank",
                  trace.path, std::nullopt, "use --op NAME to replay an op by name");
    }
    if (host)
      out.selection =
          fmt::format("top {} ops by host time (the trace has no GPU work)", request.top_k);
    for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < request.top_k; ++i)
      selected.push_back(ranked[i]);
  }

  int rank = 0;
  for (auto* g : selected) {
    ++rank;
    const auto sig = signature_of(trace, g->key);
    const double share = out.trace_gpu_ns ? static_cast<double>(g->cost.total_ns) /
                                                static_cast<double>(out.trace_gpu_ns)
                                          : 0;
    const auto* op = find_op(sig.name);
    std::string reason;
    if (!op) {
      reason = not_replayable_reason(sig.name);
    } else {
      auto parsed = parse_op_arguments(recorded_args(sig));
      if (!parsed.error.empty()) {
        reason = parsed.error;
      } else {
        ReplayTarget t;
        t.rank = rank;
        t.slug = slug_for(rank, sig.name);
        t.signature = sig;
        t.op = op;
        t.arguments = std::move(parsed.arguments);
        t.cost = g->cost;
        t.share_of_gpu_time = share;
        if (auto why = prepare_target(t)) {
          reason = *why;
        } else {
          roofline_floor(t);
          t.module_text =
              bench_module_text(t, std::filesystem::path(trace.path).filename().string());
          out.targets.push_back(std::move(t));
          continue;
        }
      }
    }
    out.skipped.push_back({rank, sig, g->cost, reason});
  }
  if (request.top_k > 0 && out.trace_gpu_ns > 0) rank_by_end_to_end_gain(trace, links, out);
  return out;
}

ReplayOutcome run_replay(const ReplayRequest& request) {
  if (request.ops.empty() && request.top_k <= 0) {
    throw Error(ErrorKind::kUsage, "nothing to replay: give --op NAME[:SHAPES] or --top-k N");
  }
  auto trace = trace::load_trace(request.trace_path, request.ingest);
  if (trace.format != trace::TraceFormat::kKineto) {
    throw Error(
        ErrorKind::kBadFormat,
        fmt::format("a {} trace has no CPU ops or recorded shapes", trace::to_string(trace.format)),
        request.trace_path.string(), std::nullopt,
        "record a PyTorch profiler trace with record_shapes=True");
  }
  return plan_replay(trace, request);
}

}  // namespace magpie::replay
