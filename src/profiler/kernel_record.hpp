#pragma once
// One GPU kernel execution as a profiler saw it, whichever profiler wrote it
// (our CUPTI library's JSONL, ncu, rocprofv3), and per-name aggregates.
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::profiler {

struct KernelRecord {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::array<int64_t, 3> grid{};
  std::array<int64_t, 3> block{};
  int64_t registers = 0;
  int64_t shared_memory = 0;  // static + dynamic bytes per block
  int64_t stream = 0;
  int64_t correlation = 0;
  int64_t device = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// A timestamp the measured program wrote between kernels (magpie_cupti_mark).
struct Marker {
  std::string label;
  int64_t ts_ns = 0;
};

struct KernelTrace {
  std::vector<KernelRecord> kernels;  // in file order
  std::vector<Marker> markers;
  size_t bad_lines = 0;               // unparsable lines skipped (a crash can cut the last one)
};

// Reads the JSONL our CUPTI library writes (one object per line). A missing
// file yields an empty trace; Error(kUnreadable) when it cannot be read.
KernelTrace read_cupti_jsonl(const std::filesystem::path& path);
KernelTrace parse_cupti_jsonl(std::string_view text);

struct KernelAggregate {
  std::string kernel_name;
  size_t dispatch_count = 0;
  double avg_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int64_t total_ns = 0;
};

// Per-name totals, largest total first.
std::vector<KernelAggregate> aggregate_by_name(const std::vector<KernelRecord>& kernels);

// Time during which at least one kernel ran, on any stream (overlaps counted
// once), optionally clipped to [lo, hi].
int64_t busy_union_ns(const std::vector<KernelRecord>& kernels, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);

// Time during which kernels of two or more different streams ran at once
// (overlaps counted once, however many streams). Kernels of one stream that
// appear to overlap (timestamp skew between back-to-back launches) do not count:
// this measures concurrency that serializing the streams would take away.
// A stream is (device, stream id).
int64_t cross_stream_overlap_ns(const std::vector<KernelRecord>& kernels);

// Kernels whose name matches `regex` (ECMAScript, search); all when empty.
std::vector<KernelRecord> filter_by_name(const std::vector<KernelRecord>& kernels, const std::string& regex);

}  // namespace magpie::profiler
