#pragma once
// Columnar storage of trace events: one vector per field, one row per event.
// Analyses read columns; nothing here knows about JSON.
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/op_args.hpp"
#include "trace/string_pool.hpp"

namespace magpie::trace {

// Kineto's event categories (docs/REFERENCE_FACTS.md §1). The raw category string is kept
// too (EventTable::cat_name) because users filter by substring of it.
enum class Category : uint8_t {
  kUnknown,  // no "cat" field
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kPythonFunction,
  kCudaRuntime,  // also legacy "Runtime"
  kCudaDriver,   // also HIP calls on ROCm
  kKernel,       // also legacy "Kernel"
  kGpuMemcpy,
  kGpuMemset,
  kAc2g,  // flows; legacy "async_cpu_to_gpu"
  kFwdBwd,
  kCpuInstantEvent,
  kOverhead,
  kTrace,
  kCudaSync,
  kCudaProfilerRange,
  kOther,
};

Category category_from_string(std::string_view cat);
std::string_view to_string(Category c);
// Work that occupies a GPU stream: kernels, copies, sets.
inline bool is_gpu_activity(Category c) {
  return c == Category::kKernel || c == Category::kGpuMemcpy || c == Category::kGpuMemset;
}
// Host-side call that can launch GPU work (carries args.correlation).
inline bool is_launch_api(Category c) {
  return c == Category::kCudaRuntime || c == Category::kCudaDriver;
}

inline constexpr int64_t kNoValue = -1;
inline constexpr uint32_t kNoDetail = UINT32_MAX;

enum class Phase : uint8_t { kComplete, kInstant, kCounter, kFlowStart, kFlowStep, kFlowEnd, kOther };


// Launch geometry and resources of GPU work; also used by launch API events
// (HIP's runtime events carry the kernel name, grid and block).
struct KernelDetail {
  std::array<int32_t, 3> grid{0, 0, 0};
  std::array<int32_t, 3> block{0, 0, 0};
  int32_t registers_per_thread = -1;
  int32_t shared_memory = -1;
  StringId kernel = kEmptyString;      // args.kernel on launch events
  StringId collective = kEmptyString;  // NCCL "Collective name"
  // CUDA graph node of a replayed kernel or of a launch recorded during
  // capture, where Kineto writes it ("graph node id"); -1 when absent.
  int64_t graph_node_id = -1;
};

// Shapes and types recorded for cpu_op events (record_shapes=True): the JSON
// text as recorded (reports print it) and, once the table is complete, its
// parsed form. One entry per distinct argument set (index_op_arguments).
struct OpDetail {
  StringId input_dims = kEmptyString;
  StringId input_type = kEmptyString;
  StringId concrete_inputs = kEmptyString;
  StringId input_strides = kEmptyString;  // "Input Strides" (magpie replay rebuilds layouts)
  OpArgs args;                            // filled by index_op_arguments
};

// A collective's arguments as PyTorch records them on NCCL/RCCL kernels and on
// record_param_comms cpu_ops (Kineto ≥ 2.1). Sparse: only events that carry
// them have an entry, so the common row pays nothing.
struct CollectiveArgs {
  uint32_t row = 0;                   // the event's row in the table
  StringId name = kEmptyString;       // "Collective name": allreduce, _allgather_base, send, ...
  StringId dtype = kEmptyString;      // "dtype": Float, BFloat16, ...
  StringId group = kEmptyString;      // "Process Group Name"
  int64_t in_nelems = kNoValue;       // "In msg nelems"
  int64_t out_nelems = kNoValue;      // "Out msg nelems"
  int32_t group_size = -1;            // "Group size"
};

// The four interned texts of an argument set: equal ids are equal strings.
struct OpDetailKey {
  StringId dims, type, concrete, strides;
  bool operator==(const OpDetailKey&) const = default;
};
struct OpDetailKeyHash {
  size_t operator()(const OpDetailKey& k) const noexcept {
    uint64_t h = (uint64_t{k.dims} << 32 | k.type) * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t{k.concrete} << 32 | k.strides) + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct EventTable;

// One op_details entry per distinct argument set while a table is built:
// ~150 thousand ops share a few hundred sets, and an entry per op cost more
// memory (and page faults) than the rest of an op's row.
class OpDetailIndex {
 public:
  // The row of `key`'s entry in `table.op_details`, appended when new.
  uint32_t add(EventTable& table, const OpDetailKey& key);

 private:
  std::unordered_map<OpDetailKey, uint32_t, OpDetailKeyHash> rows_;
};

struct EventTable {
  std::vector<int64_t> ts_ns;
  std::vector<int64_t> dur_ns;  // 0 when absent
  std::vector<StringId> name;
  std::vector<StringId> cat_name;
  std::vector<Category> category;
  std::vector<Phase> phase;
  // Non-negative integer pid/tid as given; every other value (strings such as
  // "Spans", negative or out-of-range integers) is interned as text and stored
  // as -(1 + StringId), so the two never collide.
  std::vector<int64_t> pid;
  std::vector<int64_t> tid;
  std::vector<int64_t> correlation;  // kNoValue when absent
  std::vector<int64_t> external_id;  // kNoValue when absent
  std::vector<int32_t> device;       // GPU events: args.device, else pid; -1 for CPU
  std::vector<int64_t> stream;       // GPU events: args.stream, else tid; -1 for CPU
  std::vector<uint32_t> detail;      // row in kernel_details or op_details, or kNoDetail

  std::vector<KernelDetail> kernel_details;
  std::vector<OpDetail> op_details;
  std::vector<CollectiveArgs> collectives;  // ascending by row

  // The collective arguments of `row`, or null.
  const CollectiveArgs* collective_of(uint32_t row) const;

  size_t size() const { return ts_ns.size(); }
  int64_t end_ns(size_t row) const { return ts_ns[row] + dur_ns[row]; }
  void reserve(size_t n);
  // Appends `other`, translating its string ids through `remap`. With `ops`,
  // `other`'s argument sets join this table's through it (equal sets, one entry).
  void append(const EventTable& other, const std::vector<StringId>& remap, OpDetailIndex* ops = nullptr);
};

inline int64_t encode_string_id(StringId id) { return -1 - static_cast<int64_t>(id); }
// Translates a pid/tid column value from one string pool to another: numbers
// pass through, encoded string ids go through `remap`. An id outside `remap`
// cannot come from a reader; it maps to the empty string rather than past
// the table's end.
inline int64_t remap_thread_key(int64_t v, const std::vector<StringId>& remap) {
  if (v >= 0) return v;
  auto old_id = static_cast<uint64_t>(-1 - v);
  return encode_string_id(old_id < remap.size() ? remap[old_id] : kEmptyString);
}

}  // namespace magpie::trace
