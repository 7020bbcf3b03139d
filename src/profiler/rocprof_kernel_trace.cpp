#include "profiler/rocprof_kernel_trace.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "core/error.hpp"
#include "profiler/csv_line.hpp"

namespace magpie::profiler {

namespace {
bool to_int(const std::string& s, int64_t& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
}  // namespace

std::vector<KernelRecord> parse_rocprof_kernel_trace(std::string_view csv, const std::string& origin) {
  std::vector<KernelRecord> out;
  std::map<std::string, size_t> col;
  size_t pos = 0, line_no = 0;
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::kBadFormat, fmt::format("line {}: {}", line_no, what), origin, std::nullopt,
                 "pass the *_kernel_trace.csv that rocprofv3 --kernel-trace --output-format csv writes");
  };
  while (pos < csv.size()) {
    size_t end = csv.find('\n', pos);
    if (end == std::string_view::npos) end = csv.size();
    std::string_view line = csv.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty() || line == "\r") continue;
    auto f = split_csv_line(line);
    if (col.empty()) {
      for (size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
      for (const char* need : {"Kernel_Name", "Start_Timestamp", "End_Timestamp"}) {
        if (!col.contains(need)) throw bad(fmt::format("header lacks column '{}'", need));
      }
      continue;
    }
    if (f.size() != col.size()) throw bad(fmt::format("{} fields, header has {}", f.size(), col.size()));
    auto num = [&](const char* name, int64_t fallback) {
      auto it = col.find(name);
      if (it == col.end()) return fallback;
      int64_t v = 0;
      if (!to_int(f[it->second], v)) throw bad(fmt::format("column {} is not an integer: '{}'", name, f[it->second]));
      return v;
    };
    KernelRecord r;
    r.name = f[col["Kernel_Name"]];
    r.start_ns = num("Start_Timestamp", 0);
    r.end_ns = num("End_Timestamp", 0);
    if (r.end_ns < r.start_ns) throw bad("End_Timestamp before Start_Timestamp");
    // rocprofv3 reports the grid in work-items; Kineto and CUDA use blocks.
    r.block = {num("Workgroup_Size_X", 1), num("Workgroup_Size_Y", 1), num("Workgroup_Size_Z", 1)};
    r.grid = {num("Grid_Size_X", 1), num("Grid_Size_Y", 1), num("Grid_Size_Z", 1)};
    for (int i = 0; i < 3; ++i) {
      if (r.block[i] > 0) r.grid[i] = (r.grid[i] + r.block[i] - 1) / r.block[i];
    }
    r.registers = num("VGPR_Count", 0);
    r.shared_memory = num("LDS_Block_Size", 0);
    r.stream = num("Stream_Id", num("Queue_Id", 0));
    r.correlation = num("Correlation_Id", 0);
    r.device = 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace magpie::profiler
