#include "analysis/op_attribution.hpp"

namespace magpie::analysis {

using trace::Category;

const trace::Trace& AttributionSources::trace_of(OpRef r) const {
  return r.source == 0 ? *trace : (*captures)[static_cast<size_t>(r.source - 1)].trace;
}

const trace::TraceLinks& AttributionSources::links_of(OpRef r) const {
  return r.source == 0 ? *links : (*captures)[static_cast<size_t>(r.source - 1)].links;
}

std::vector<KernelOwner> attribute_kernels(const AttributionSources& s,
                                           std::span<const uint32_t> gpu_rows,
                                           const std::function<bool(OpRef)>& has_model,
                                           AttributionRule rule) {
  std::vector<KernelOwner> out;
  out.reserve(gpu_rows.size());
  for (uint32_t r : gpu_rows) {
    KernelOwner k;
    k.gpu_row = r;
    const int32_t launch = s.links->launch_of[r];
    const bool graph =
        launch >= 0 && trace::is_graph_launch(s.trace->name(static_cast<size_t>(launch)));
    if (graph) k.graph_launch = launch;
    if (graph && s.alignment && s.alignment->launch_of_row[r] >= 0) {
      const auto& cl = s.alignment->launches[static_cast<size_t>(s.alignment->launch_of_row[r])];
      k.leaf = {static_cast<int32_t>(cl.capture) + 1, cl.op};
      k.via_capture = true;
    } else {
      k.leaf = {0, trace::launching_op(*s.trace, *s.links, r)};
    }
    k.op = k.leaf;
    k.nearest = k.leaf;
    if (k.leaf.valid()) {
      const auto& t = s.trace_of(k.leaf);
      const auto& l = s.links_of(k.leaf);
      bool found = has_model(k.leaf);
      for (int32_t p = l.parent[static_cast<size_t>(k.leaf.row)]; p >= 0;
           p = l.parent[static_cast<size_t>(p)]) {
        if (found && rule == AttributionRule::kNearestModelled) break;
        if (t.events.category[static_cast<size_t>(p)] != Category::kCpuOp) continue;
        if (!has_model({k.leaf.source, p})) continue;
        if (!found) k.nearest = {k.leaf.source, p};
        k.op = {k.leaf.source, p};
        found = true;
      }
    }
    out.push_back(k);
  }
  return out;
}

}  // namespace magpie::analysis
