#include "profiler/rocprof_kernel_trace.hpp"

#include "trace/rocprof_reader.hpp"

namespace magpie::profiler {

// One CSV reader for rocprofv3 in the project (src/trace); here its rows
// become KernelRecords.
std::vector<KernelRecord> parse_rocprof_kernel_trace(std::string_view csv, const std::string& origin) {
  trace::Trace t = trace::parse_rocprof_csv(csv, origin);
  const auto& e = t.events;
  std::vector<KernelRecord> out;
  out.reserve(e.size());
  for (size_t r = 0; r < e.size(); ++r) {
    if (e.category[r] != trace::Category::kKernel) continue;
    KernelRecord k;
    k.name = std::string(t.name(r));
    k.start_ns = e.ts_ns[r];
    k.end_ns = e.end_ns(r);
    k.stream = e.stream[r];
    k.correlation = e.correlation[r] == trace::kNoValue ? 0 : e.correlation[r];
    k.device = e.device[r] < 0 ? 0 : e.device[r];
    if (e.detail[r] != trace::kNoDetail) {
      const auto& d = e.kernel_details[e.detail[r]];
      for (int i = 0; i < 3; ++i) {
        k.grid[i] = d.grid[i];  // blocks, as Kineto and CUDA count them
        k.block[i] = d.block[i];
      }
      k.registers = d.registers_per_thread < 0 ? 0 : d.registers_per_thread;
      k.shared_memory = d.shared_memory < 0 ? 0 : d.shared_memory;
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace magpie::profiler
