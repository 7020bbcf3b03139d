#include "profiler/kernel_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <utility>

#include "core/error.hpp"
#include "core/intervals.hpp"
#include "core/file_io.hpp"

namespace magpie::profiler {

namespace {
std::array<int64_t, 3> dims(const nlohmann::json& j) {
  std::array<int64_t, 3> d{1, 1, 1};
  if (j.is_array()) {
    for (size_t i = 0; i < 3 && i < j.size(); ++i) d[i] = j[i].get<int64_t>();
  }
  return d;
}
}  // namespace

KernelTrace parse_cupti_jsonl(std::string_view text) {
  KernelTrace t;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (j.contains("marker")) {
        t.markers.push_back({j["marker"].get<std::string>(), j.value("ts", int64_t{0})});
        continue;
      }
      KernelRecord r;
      r.name = j.value("name", "");
      r.start_ns = j.value("start", int64_t{0});
      r.end_ns = j.value("end", int64_t{0});
      if (j.contains("grid")) r.grid = dims(j["grid"]);
      if (j.contains("block")) r.block = dims(j["block"]);
      r.registers = j.value("registers", int64_t{0});
      r.shared_memory = j.value("static_shared", int64_t{0}) + j.value("dynamic_shared", int64_t{0});
      r.stream = j.value("stream", int64_t{0});
      r.correlation = j.value("correlation", int64_t{0});
      r.device = j.value("device", int64_t{0});
      t.kernels.push_back(std::move(r));
    } catch (const nlohmann::json::exception&) {
      ++t.bad_lines;
    }
  }
  return t;
}

KernelTrace read_cupti_jsonl(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  auto buf = read_file(path);
  return parse_cupti_jsonl(buf.view());
}

std::vector<KernelAggregate> aggregate_by_name(const std::vector<KernelRecord>& kernels) {
  std::map<std::string, KernelAggregate> by;
  for (const auto& k : kernels) {
    auto& a = by[k.name];
    int64_t d = k.duration_ns();
    if (a.dispatch_count == 0) {
      a.kernel_name = k.name;
      a.min_ns = a.max_ns = d;
    }
    ++a.dispatch_count;
    a.total_ns += d;
    a.min_ns = std::min(a.min_ns, d);
    a.max_ns = std::max(a.max_ns, d);
  }
  std::vector<KernelAggregate> out;
  for (auto& [_, a] : by) {
    a.avg_ns = static_cast<double>(a.total_ns) / static_cast<double>(a.dispatch_count);
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.total_ns > y.total_ns; });
  return out;
}

int64_t busy_union_ns(const std::vector<KernelRecord>& kernels, int64_t lo, int64_t hi) {
  std::vector<Interval> iv;
  for (const auto& k : kernels) {
    int64_t s = std::max(k.start_ns, lo), e = std::min(k.end_ns, hi);
    if (e > s) iv.emplace_back(s, e);
  }
  return merge_intervals(iv);
}

int64_t cross_stream_overlap_ns(const std::vector<KernelRecord>& kernels) {
  using StreamKey = std::pair<int64_t, int64_t>;  // (device, stream)
  struct Edge {
    int64_t t;
    int delta;  // +1 start, -1 end
    StreamKey stream;
  };
  std::vector<Edge> edges;
  for (const auto& k : kernels) {
    if (k.end_ns <= k.start_ns) continue;
    edges.push_back({k.start_ns, +1, {k.device, k.stream}});
    edges.push_back({k.end_ns, -1, {k.device, k.stream}});
  }
  // Ends before starts at the same instant: kernels that only touch do not overlap.
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : a.delta < b.delta;
  });
  std::map<StreamKey, int> running;  // kernels running per stream
  size_t busy_streams = 0;
  int64_t overlap = 0, prev = 0;
  for (const auto& e : edges) {
    if (busy_streams >= 2) overlap += e.t - prev;
    prev = e.t;
    int& n = running[e.stream];
    if (e.delta > 0 && n++ == 0) ++busy_streams;
    if (e.delta < 0 && --n == 0) --busy_streams;
  }
  return overlap;
}

std::vector<KernelRecord> filter_by_name(const std::vector<KernelRecord>& kernels, const std::string& regex) {
  if (regex.empty()) return kernels;
  std::regex re;
  try {
    re = std::regex(regex);
  } catch (const std::regex_error& e) {
    throw Error(ErrorKind::kUsage, fmt::format("invalid kernel_filter regex '{}': {}", regex, e.what()), "",
                std::nullopt, "write an ECMAScript regular expression, e.g. 'vector_add|matmul'");
  }
  std::vector<KernelRecord> out;
  for (const auto& k : kernels) {
    if (std::regex_search(k.name, re)) out.push_back(k);
  }
  return out;
}

}  // namespace magpie::profiler
