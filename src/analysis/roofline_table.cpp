#include "analysis/roofline_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "analysis/perf_model_inference.hpp"
#include "sources/kernel_name.hpp"

namespace magpie::analysis {

using trace::Category;

RooflineFigures roofline_on(const GpuArch* arch, const OpCost& cost, double measured_us) {
  RooflineFigures f;
  f.compute_spec = compute_spec(cost.compute_dtype, cost.matrix);
  if (arch) {
    f.peak_tflops = peak_tflops(*arch, cost.compute_dtype, cost.matrix).value_or(0);
    f.mem_bw_tbps = arch->mem_bw_tbps;
  }
  f.point = roofline(cost, measured_us, f.peak_tflops, f.mem_bw_tbps);
  return f;
}

std::string peak_check(const RooflineFigures& f, double achieved_tflops, double achieved_tbps) {
  std::string why;
  if (f.peak_tflops > 0 && achieved_tflops > f.peak_tflops) {
    why = fmt::format(
        "above the {} compute peak ({:.4g} > {:.4g} TFLOP/s): impossible; the FLOPs or kernels "
        "counted for the op are wrong for it (other ops' work, or a faster precision than its "
        "inputs' dtype, e.g. TF32 for fp32), or the trace ran on another GPU (--gpu-arch)",
        f.compute_spec.empty() ? "device's" : f.compute_spec, achieved_tflops, f.peak_tflops);
  }
  if (f.mem_bw_tbps > 0 && achieved_tbps > f.mem_bw_tbps) {
    why += fmt::format(
        "{}above the memory bandwidth ({:.4g} > {:.4g} TB/s): the operands were served from "
        "cache, or the bytes model counts more traffic than the kernels made",
        why.empty() ? "" : "; ", achieved_tbps, f.mem_bw_tbps);
  }
  return why;
}

std::string op_category(const OpCost& c) {
  if (c.category == "GEMM") return "GEMM";
  if (c.category == "SDPA") return "SDPA_fwd";
  if (c.category == "CONV") return "CONV_fwd";
  if (c.category == "MoE") return "MoE_fused";
  if (c.category == "norm") return "NORM_fwd";
  if (c.category == "memory") return "KV_cache";
  if (c.category == "elementwise") {
    return c.params_json.find("\"n_in1\"") != std::string::npos ? "BinaryElementwise"
                                                                : "UnaryElementwise";
  }
  return c.category;
}

namespace {

bool any_of_names(std::string_view n, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), n) != names.end();
}
bool has_any(std::string_view n, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](std::string_view p) { return n.find(p) != std::string_view::npos; });
}

}  // namespace

std::string op_category_by_name(std::string_view op_name,
                                std::span<const sources::KernelCategory> kernel_categories) {
  std::string_view n = op_name;
  if (n.starts_with("aten::")) n.remove_prefix(6);
  const bool backward = n.ends_with("_backward") || has_any(n, {"backward_"});
  if (op_name.starts_with("c10d::") || op_name.starts_with("nccl:") ||
      n == "record_param_comms" ||
      has_any(n, {"allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter",
                  "alltoall", "all_to_all"})) {
    return "communication";
  }
  if (has_any(n, {"conv1d", "conv2d", "conv3d", "convolution", "conv_transpose", "conv_tbc"})) {
    return backward ? "CONV_bwd" : "CONV_fwd";
  }
  if (has_any(n, {"scaled_dot_product", "flash_attention", "efficient_attention",
                  "cudnn_attention"})) {
    return backward ? "SDPA_bwd" : "SDPA_fwd";
  }
  if (any_of_names(n, {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm",
                       "addmv", "mv", "dot", "einsum", "_int_mm", "_grouped_mm",
                       "_scaled_grouped_mm"})) {
    return "GEMM";
  }
  if (has_any(n, {"layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm"})) {
    return backward ? "NORM_bwd" : "NORM_fwd";
  }
  if (any_of_names(n, {"_softmax", "softmax", "_log_softmax", "log_softmax"})) return "softmax";
  if (any_of_names(n, {"sum", "mean", "amax", "amin"})) return "reduce";
  // By its kernels: what kernel_summary.csv says they are, when they agree.
  std::optional<sources::KernelCategory> common;
  for (const sources::KernelCategory c : kernel_categories) {
    if (common && *common != c) return "other";
    common = c;
  }
  if (!common) return "other";
  switch (*common) {
    case sources::KernelCategory::kGemm:
      return "GEMM";
    case sources::KernelCategory::kAttention:
      return "SDPA_fwd";
    case sources::KernelCategory::kCommunication:
      return "communication";
    default:
      return "other";
  }
}

namespace {

struct CallKey {
  OpRef op;
  int32_t graph_launch;
  bool operator==(const CallKey&) const = default;
};
struct CallKeyHash {
  size_t operator()(const CallKey& k) const {
    return std::hash<int64_t>()((static_cast<int64_t>(k.op.source) << 56) ^
                                (static_cast<int64_t>(k.op.row) << 24) ^ k.graph_launch);
  }
};

// An op's name and argument set in one trace: ops with equal keys have the same
// model and fall in the same group.
struct SignatureKey {
  int32_t source;
  trace::StringId name;
  uint32_t detail;  // OpDetail index, or kNoDetail
  bool operator==(const SignatureKey&) const = default;
};
struct SignatureKeyHash {
  size_t operator()(const SignatureKey& k) const noexcept {
    uint64_t h = (static_cast<uint64_t>(k.name) << 32 | k.detail) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>((h ^ (h >> 31)) + static_cast<uint32_t>(k.source));
  }
};

// One model per distinct (trace, op name, argument set): the arguments were
// parsed at ingest (trace::OpDetail::args) and a trace holds a few hundred
// distinct sets over hundreds of thousands of ops.
class CostCache {
 public:
  CostCache(const AttributionSources& s, const StepAnnotation* step) : s_(s), step_(step) {}
  const std::optional<OpCost>& get(OpRef r) {
    const auto& t = s_.trace_of(r);
    const auto row = static_cast<size_t>(r.row);
    const uint32_t d = t.events.detail[row];
    if (d == trace::kNoDetail) return none_;
    auto [it, inserted] = index_.try_emplace(SignatureKey{r.source, t.events.name[row], d}, costs_.size());
    if (inserted) costs_.push_back(compute(t, row, t.events.op_details[d]));
    return costs_[it->second];
  }

 private:
  std::optional<OpCost> compute(const trace::Trace& t, size_t row, const trace::OpDetail& od) const {
    if (!od.args.dims) return std::nullopt;
    return model_for_inference_op(t.name(row), *od.args.dims, od.args.types, od.args.concrete, step_);
  }
  const AttributionSources& s_;
  const StepAnnotation* step_;
  const std::optional<OpCost> none_;
  std::unordered_map<SignatureKey, size_t, SignatureKeyHash> index_;
  std::deque<std::optional<OpCost>> costs_;  // stable: callers keep references
};

void build_groups(StageAnalysis& a, const GpuArch* arch, size_t signatures) {
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, size_t>
      index;
  std::vector<size_t> group_of_signature(signatures, SIZE_MAX);  // the string lookup, cached
  for (const auto& c : a.calls) {
    size_t* cached = c.signature >= 0 ? &group_of_signature[static_cast<size_t>(c.signature)] : nullptr;
    size_t gi = cached ? *cached : SIZE_MAX;
    if (gi == SIZE_MAX) {
      auto key = std::tuple{c.category, c.name, c.input_dims, c.input_type, c.concrete_inputs};
      auto [it, inserted] = index.emplace(key, a.groups.size());
      if (inserted) {
        OpGroup g;
        std::tie(g.category, g.name, g.input_dims, g.input_type, g.concrete_inputs) = key;
        g.cost = c.cost;
        if (c.cost) g.first = roofline_on(arch, *c.cost, c.kernel_us);
        a.groups.push_back(std::move(g));
      }
      gi = it->second;
      if (cached) *cached = gi;
    }
    OpGroup& g = a.groups[gi];
    ++g.calls;
    g.kernels += c.gpu_rows.size();
    g.call_us.push_back(c.kernel_us);
    g.total_us += c.kernel_us;
    if (c.cost) {
      const RooflineFigures f = roofline_on(arch, *c.cost, c.kernel_us);
      const RooflinePoint& p = f.point;
      g.mean_achieved_tflops += p.achieved_tflops;
      g.mean_achieved_tbps += p.achieved_tbps;
      g.mean_pct_roofline += p.pct_roofline;
      if (std::string why = peak_check(f, p.achieved_tflops, p.achieved_tbps); !why.empty()) {
        if (g.calls_above_peak++ == 0) g.above_peak = std::move(why);
      }
    }
  }
  for (auto& g : a.groups) {
    const double n = static_cast<double>(g.calls);
    g.mean_achieved_tflops /= n;
    g.mean_achieved_tbps /= n;
    g.mean_pct_roofline /= n;
    if (g.calls_above_peak > 0) {
      ++a.groups_above_peak;
      g.above_peak = fmt::format("{} of {} call(s) {}", g.calls_above_peak, g.calls, g.above_peak);
    }
  }
  std::stable_sort(a.groups.begin(), a.groups.end(),
                   [](const OpGroup& x, const OpGroup& y) { return x.total_us > y.total_us; });
}

void build_kernels(StageAnalysis& a, const trace::Trace& t, const GpuArch* arch) {
  std::unordered_map<trace::StringId, size_t> index;
  for (const auto& c : a.calls) {
    for (uint32_t r : c.gpu_rows) {
      auto [it, inserted] = index.emplace(t.events.name[r], a.kernels.size());
      if (inserted) a.kernels.push_back({.name = std::string(t.name(r))});
      KernelGroup& k = a.kernels[it->second];
      const double us = static_cast<double>(t.events.dur_ns[r]) / 1e3;
      k.durations_us.push_back(us);
      k.total_us += us;
      ++k.ops[c.name];
      // A kernel carries its op's whole cost only when it is the op's only kernel.
      if (c.cost && c.gpu_rows.size() == 1) {
        const RooflineFigures f = roofline_on(arch, *c.cost, us);
        ++k.modelled;
        k.compute_spec = f.compute_spec;
        k.bound = f.point.bound;
        k.arithmetic_intensity = f.point.arithmetic_intensity;
        k.roofline_time_us = f.point.roofline_time_us;
        k.mean_achieved_tflops += f.point.achieved_tflops;
        k.mean_achieved_tbps += f.point.achieved_tbps;
        k.mean_pct_roofline += f.point.pct_roofline;
        std::string why = peak_check(f, f.point.achieved_tflops, f.point.achieved_tbps);
        if (!why.empty() && k.modelled_above_peak++ == 0) k.above_peak = std::move(why);
      }
    }
  }
  for (auto& k : a.kernels) {
    if (k.modelled == 0) continue;
    const double n = static_cast<double>(k.modelled);
    k.mean_achieved_tflops /= n;
    k.mean_achieved_tbps /= n;
    k.mean_pct_roofline /= n;
    if (k.modelled_above_peak > 0) {
      k.above_peak =
          fmt::format("{} of {} call(s) {}", k.modelled_above_peak, k.modelled, k.above_peak);
    }
  }
  std::stable_sort(
      a.kernels.begin(), a.kernels.end(),
      [](const KernelGroup& x, const KernelGroup& y) { return x.total_us > y.total_us; });
}

}  // namespace

StageAnalysis analyze_stage(const StageInputs& in) {
  StageAnalysis a;
  const auto& s = in.sources;
  const auto& t = *s.trace;
  const auto& e = t.events;
  CostCache costs(s, in.step);
  // The op the user wrote gets its subtree's kernels (TraceLens): under autocast
  // aten::linear gets its casts and the GEMM that its inner aten::mm launched.
  auto owners = attribute_kernels(
      s, in.gpu_rows, [&](OpRef r) { return costs.get(r).has_value(); },
      AttributionRule::kOutermostModelled);
  // Without a modelled op on the way up (no recorded shapes), the op the user
  // wrote is the outermost op whose name says what it is (aten::linear,
  // aten::conv1d): it gets its subtree's kernels, as it would with shapes.
  std::unordered_map<uint64_t, bool> named;  // (source, op name) → has a category by name
  auto known_by_name = [&](OpRef r) {
    const auto& ot = s.trace_of(r);
    const trace::StringId id = ot.events.name[static_cast<size_t>(r.row)];
    const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(r.source)) << 32 | id;
    auto [it, inserted] = named.try_emplace(key, false);
    if (inserted) it->second = op_category_by_name(ot.name(static_cast<size_t>(r.row)), {}) != "other";
    return it->second;
  };
  for (auto& k : owners) {
    if (!k.leaf.valid() || costs.get(k.op).has_value()) continue;
    const auto& ot = s.trace_of(k.leaf);
    const auto& ol = s.links_of(k.leaf);
    for (int32_t p = k.leaf.row; p >= 0; p = ol.parent[static_cast<size_t>(p)]) {
      if (ot.events.category[static_cast<size_t>(p)] != Category::kCpuOp) continue;
      if (known_by_name({k.leaf.source, p})) k.op = {k.leaf.source, p};
    }
  }

  std::unordered_map<CallKey, size_t, CallKeyHash> call_index;
  std::unordered_map<int32_t, size_t> graph_calls;  // graph launch row → its pseudo call
  std::vector<Interval> compute, comm, copies;
  // Kernel names are classified once per distinct name, not per event.
  std::vector<int8_t> kernel_category(t.strings.size(), -1);
  auto category_of_name = [&](trace::StringId id) {
    int8_t& v = kernel_category[id];
    if (v < 0) v = static_cast<int8_t>(sources::parse_kernel_name(t.str(id)).category);
    return static_cast<sources::KernelCategory>(v);
  };
  auto is_comm_name = [&](trace::StringId id) {
    return category_of_name(id) == sources::KernelCategory::kCommunication;
  };
  // (source, op name, argument set) → signature, for build_groups.
  std::unordered_map<SignatureKey, int32_t, SignatureKeyHash> signature_of;
  for (const auto& k : owners) {
    const uint32_t r = k.gpu_row;
    ++a.gpu_events;
    a.total_gpu_us += static_cast<double>(e.dur_ns[r]) / 1e3;
    if (k.graph_launch >= 0) {
      ++a.graph_events;
      a.graph_events_attributed += k.via_capture && k.leaf.valid();
    }
    if (e.category[r] != Category::kKernel) {
      copies.emplace_back(e.ts_ns[r], e.end_ns(r));
    } else if (is_comm_name(e.name[r])) {
      comm.emplace_back(e.ts_ns[r], e.end_ns(r));
    } else {
      compute.emplace_back(e.ts_ns[r], e.end_ns(r));
    }

    size_t ci = 0;
    if (k.op.valid()) {
      auto [it, inserted] = call_index.emplace(CallKey{k.op, k.graph_launch}, a.calls.size());
      if (inserted) {
        OpCall c;
        c.op = k.op;
        const auto& ot = s.trace_of(k.op);
        const auto row = static_cast<size_t>(k.op.row);
        c.name = std::string(ot.name(row));
        const uint32_t detail = ot.events.detail[row];
        const SignatureKey sig{k.op.source, ot.events.name[row], detail};
        c.signature = signature_of.try_emplace(sig, static_cast<int32_t>(signature_of.size())).first->second;
        if (detail != trace::kNoDetail) {
          const auto& od = ot.events.op_details[detail];
          c.input_dims = std::string(ot.str(od.input_dims));
          c.input_type = std::string(ot.str(od.input_type));
          c.concrete_inputs = std::string(ot.str(od.concrete_inputs));
        }
        if (c.input_dims.empty()) ++a.ops_without_shapes;
        c.cost = costs.get(k.op);
        if (c.cost) c.category = op_category(*c.cost);  // else by name, once its kernels are known
        a.calls.push_back(std::move(c));
      }
      ci = it->second;
      // Matrix work runs at the dtype of the inner op that launched it: under
      // autocast aten::linear(float) runs its aten::mm in bf16.
      auto& cost = a.calls[ci].cost;
      if (cost && cost->matrix && k.nearest.valid() && k.nearest != k.op) {
        const auto& inner = costs.get(k.nearest);
        if (inner && inner->matrix && !inner->compute_dtype.empty()) {
          cost->compute_dtype = inner->compute_dtype;
        }
      }
    } else {
      ++a.unattributed_events;
      // Graph replays without a capture trace collapse into their launch call,
      // as in the trace itself (one call per launch); other orphans are one
      // call each, grouped later by kernel name.
      const bool graph = k.graph_launch >= 0;
      auto [it, inserted] = graph ? graph_calls.emplace(k.graph_launch, a.calls.size())
                                  : std::pair{graph_calls.end(), true};
      if (inserted) {
        OpCall c;
        c.name = std::string(graph ? t.name(static_cast<size_t>(k.graph_launch)) : t.name(r));
        c.category = graph ? "graph_replay" : "unattributed";
        a.calls.push_back(std::move(c));
        ci = a.calls.size() - 1;
      } else {
        ci = it->second;
      }
    }
    a.calls[ci].gpu_rows.push_back(r);
    a.calls[ci].kernel_us += static_cast<double>(e.dur_ns[r]) / 1e3;
  }
  // Ops without a model: a category from the op's name, else from its kernels
  // (the categories of kernel_summary), decided once per signature.
  std::vector<std::string> category_of_signature(signature_of.size());
  std::vector<sources::KernelCategory> cats;
  for (auto& c : a.calls) {
    if (!c.op.valid() || c.cost) continue;
    std::string& cached = category_of_signature[static_cast<size_t>(c.signature)];
    if (cached.empty()) {
      cats.clear();
      for (uint32_t r : c.gpu_rows) {
        if (e.category[r] == Category::kKernel) cats.push_back(category_of_name(e.name[r]));
      }
      cached = op_category_by_name(c.name, cats);
    }
    c.category = cached;
  }
  a.timeline = compute_gpu_timeline(std::move(compute), std::move(comm), std::move(copies));
  build_groups(a, in.arch, signature_of.size());
  build_kernels(a, t, in.arch);
  return a;
}

}  // namespace magpie::analysis
