#pragma once
// Which CPU op each GPU kernel belongs to. Eager kernels: the innermost
// cpu_op around their launch (trace_links). Graph-replayed kernels: the op
// that launched them at capture time (graph_capture_alignment). The op
// reported depends on the rule: the nearest op up the tree that has a perf
// model (aten::mm, not the aten::copy_ it called), or, as TraceLens does, the
// outermost one: the op the user wrote gets every kernel of its subtree
// (aten::conv1d under autocast gets its dtype casts and the cuDNN kernel that
// aten::cudnn_convolution launched, and the inner op is not counted again).
// Without a modelled op on the way up, the innermost op is reported.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "analysis/graph_capture_alignment.hpp"
#include "trace/trace.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

// An op in one of the loaded traces: source 0 is the analysed trace, source
// i + 1 the i-th capture trace. row -1 = no op.
struct OpRef {
  int32_t source = 0;
  int32_t row = -1;
  bool valid() const { return row >= 0; }
  bool operator==(const OpRef&) const = default;
};

enum class AttributionRule : uint8_t {
  kNearestModelled,    // the innermost modelled op: what replay re-runs
  kOutermostModelled,  // the op the user wrote: the roofline tables (TraceLens)
};

struct KernelOwner {
  uint32_t gpu_row = 0;
  OpRef op;    // the op reported (see above); invalid when none is known
  OpRef leaf;  // the innermost op around the launch
  // The nearest modelled op from the leaf up (== op under kNearestModelled):
  // under autocast it holds the dtype the matrix units really ran at.
  OpRef nearest;
  // Kernels of one call share this: the op, plus the graph launch that
  // replayed it (a captured op runs once per replay).
  int32_t graph_launch = -1;  // launch API row of the replaying graph launch, else -1
  bool via_capture = false;
};

struct AttributionSources {
  const trace::Trace* trace = nullptr;
  const trace::TraceLinks* links = nullptr;
  const std::vector<CaptureTrace>* captures = nullptr;  // may be null
  const GraphAlignment* alignment = nullptr;            // may be null
  const trace::Trace& trace_of(OpRef r) const;
  const trace::TraceLinks& links_of(OpRef r) const;
};

std::vector<KernelOwner> attribute_kernels(
    const AttributionSources& sources, std::span<const uint32_t> gpu_rows,
    const std::function<bool(OpRef)>& has_model,
    AttributionRule rule = AttributionRule::kNearestModelled);

}  // namespace magpie::analysis
