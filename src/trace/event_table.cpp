#include "trace/event_table.hpp"

#include <algorithm>

#include <utility>

namespace magpie::trace {

Category category_from_string(std::string_view cat) {
  // Ordered by frequency in real traces.
  static constexpr std::pair<std::string_view, Category> kNames[] = {
      {"python_function", Category::kPythonFunction},
      {"cpu_op", Category::kCpuOp},
      {"kernel", Category::kKernel},
      {"cuda_runtime", Category::kCudaRuntime},
      {"cuda_driver", Category::kCudaDriver},
      {"gpu_memcpy", Category::kGpuMemcpy},
      {"gpu_memset", Category::kGpuMemset},
      {"user_annotation", Category::kUserAnnotation},
      {"gpu_user_annotation", Category::kGpuUserAnnotation},
      {"ac2g", Category::kAc2g},
      {"async_cpu_to_gpu", Category::kAc2g},
      {"fwdbwd", Category::kFwdBwd},
      {"cpu_instant_event", Category::kCpuInstantEvent},
      {"overhead", Category::kOverhead},
      {"Trace", Category::kTrace},
      {"cuda_sync", Category::kCudaSync},
      {"cuda_profiler_range", Category::kCudaProfilerRange},
      {"Runtime", Category::kCudaRuntime},
      {"Kernel", Category::kKernel},
      {"Memcpy", Category::kGpuMemcpy},
      {"Memset", Category::kGpuMemset},
  };
  if (cat.empty()) return Category::kUnknown;
  for (const auto& [text, value] : kNames) {
    if (text == cat) return value;
  }
  return Category::kOther;
}

std::string_view to_string(Category c) {
  switch (c) {
    case Category::kUnknown: return "";
    case Category::kCpuOp: return "cpu_op";
    case Category::kUserAnnotation: return "user_annotation";
    case Category::kGpuUserAnnotation: return "gpu_user_annotation";
    case Category::kPythonFunction: return "python_function";
    case Category::kCudaRuntime: return "cuda_runtime";
    case Category::kCudaDriver: return "cuda_driver";
    case Category::kKernel: return "kernel";
    case Category::kGpuMemcpy: return "gpu_memcpy";
    case Category::kGpuMemset: return "gpu_memset";
    case Category::kAc2g: return "ac2g";
    case Category::kFwdBwd: return "fwdbwd";
    case Category::kCpuInstantEvent: return "cpu_instant_event";
    case Category::kOverhead: return "overhead";
    case Category::kTrace: return "Trace";
    case Category::kCudaSync: return "cuda_sync";
    case Category::kCudaProfilerRange: return "cuda_profiler_range";
    case Category::kOther: return "other";
  }
  return "other";
}

void EventTable::reserve(size_t n) {
  ts_ns.reserve(n);
  dur_ns.reserve(n);
  name.reserve(n);
  cat_name.reserve(n);
  category.reserve(n);
  phase.reserve(n);
  pid.reserve(n);
  tid.reserve(n);
  correlation.reserve(n);
  external_id.reserve(n);
  device.reserve(n);
  stream.reserve(n);
  detail.reserve(n);
}

namespace {
template <class T>
void append_column(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}
}  // namespace

const CollectiveArgs* EventTable::collective_of(uint32_t row) const {
  auto it = std::lower_bound(collectives.begin(), collectives.end(), row,
                             [](const CollectiveArgs& c, uint32_t r) { return c.row < r; });
  return it != collectives.end() && it->row == row ? &*it : nullptr;
}

uint32_t OpDetailIndex::add(EventTable& table, const OpDetailKey& key) {
  auto [it, fresh] = rows_.try_emplace(key, static_cast<uint32_t>(table.op_details.size()));
  if (fresh) table.op_details.push_back({key.dims, key.type, key.concrete, key.strides, {}});
  return it->second;
}

void EventTable::append(const EventTable& other, const std::vector<StringId>& remap, OpDetailIndex* ops) {
  const size_t kernel_base = kernel_details.size();
  const size_t op_base = op_details.size();
  // Where each of `other`'s argument sets lands in this table.
  std::vector<uint32_t> op_row(other.op_details.size());
  for (size_t i = 0; i < other.op_details.size(); ++i) {
    const OpDetail& o = other.op_details[i];
    OpDetailKey key{remap[o.input_dims], remap[o.input_type], remap[o.concrete_inputs], remap[o.input_strides]};
    if (ops) {
      op_row[i] = ops->add(*this, key);
    } else {
      op_row[i] = static_cast<uint32_t>(op_base + i);
      op_details.push_back({key.dims, key.type, key.concrete, key.strides, o.args});
    }
  }
  append_column(ts_ns, other.ts_ns);
  append_column(dur_ns, other.dur_ns);
  append_column(category, other.category);
  append_column(phase, other.phase);
  append_column(correlation, other.correlation);
  append_column(external_id, other.external_id);
  append_column(device, other.device);
  append_column(stream, other.stream);
  for (StringId id : other.name) name.push_back(remap[id]);
  for (StringId id : other.cat_name) cat_name.push_back(remap[id]);
  for (int64_t v : other.pid) pid.push_back(remap_thread_key(v, remap));
  for (int64_t v : other.tid) tid.push_back(remap_thread_key(v, remap));
  for (size_t i = 0; i < other.detail.size(); ++i) {
    uint32_t d = other.detail[i];
    if (d == kNoDetail) {
      detail.push_back(kNoDetail);
    } else if (is_gpu_activity(other.category[i]) || is_launch_api(other.category[i])) {
      detail.push_back(static_cast<uint32_t>(kernel_base + d));
    } else {
      detail.push_back(op_row[d]);
    }
  }
  for (KernelDetail k : other.kernel_details) {
    k.kernel = remap[k.kernel];
    k.collective = remap[k.collective];
    kernel_details.push_back(k);
  }
  const auto row_base = static_cast<uint32_t>(ts_ns.size() - other.size());
  for (CollectiveArgs c : other.collectives) {
    c.row += row_base;
    c.name = remap[c.name];
    c.dtype = remap[c.dtype];
    c.group = remap[c.group];
    collectives.push_back(c);
  }
}

}  // namespace magpie::trace
