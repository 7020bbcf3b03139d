#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "profiler/kernel_record.hpp"
#include "profiler/ncu_csv.hpp"
#include "profiler/rocprof_kernel_trace.hpp"

namespace magpie::profiler {
namespace {

const std::filesystem::path kData = std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data/kernel";

TEST(CuptiJsonl, ParsesKernelsMarkersAndSkipsACutLine) {
  auto t = read_cupti_jsonl(kData / "cupti_sample.jsonl");
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.markers.size(), 1u);
  EXPECT_EQ(t.bad_lines, 1u);
  const auto& side = t.kernels[1];
  EXPECT_EQ(side.stream, 13);
  EXPECT_EQ(side.shared_memory, 5120);
  EXPECT_EQ(side.registers, 32);
  EXPECT_EQ(side.grid[0], 4);
  EXPECT_EQ(side.block[0], 128);
  EXPECT_EQ(t.kernels[0].correlation, 11);
  // 1000-1400 (two streams overlapping) + 2000-2260.
  EXPECT_EQ(busy_union_ns(t.kernels), 660);
  EXPECT_EQ(busy_union_ns(t.kernels, 1100, 2100), 400);
  auto agg = aggregate_by_name(t.kernels);
  ASSERT_EQ(agg.size(), 2u);
  EXPECT_EQ(agg[0].dispatch_count, 2u);
  EXPECT_EQ(agg[0].total_ns, 510);
  EXPECT_EQ(agg[0].min_ns, 250);
  EXPECT_EQ(agg[0].max_ns, 260);
  EXPECT_EQ(filter_by_name(t.kernels, "^side").size(), 1u);
  EXPECT_THROW(filter_by_name(t.kernels, "("), Error);
  EXPECT_TRUE(read_cupti_jsonl(kData / "absent.jsonl").kernels.empty());
}

KernelRecord on(int64_t stream, int64_t start, int64_t end, int64_t device = 0) {
  KernelRecord k;
  k.name = "k";
  k.stream = stream;
  k.start_ns = start;
  k.end_ns = end;
  k.device = device;
  return k;
}

TEST(CrossStreamOverlap, SameStreamOverlapAndTouchingKernelsCountNothing) {
  // Skewed back-to-back kernels on one stream, then a kernel of another stream starting exactly at an end.
  EXPECT_EQ(cross_stream_overlap_ns({on(7, 0, 100), on(7, 50, 150), on(13, 150, 300)}), 0);
  EXPECT_EQ(cross_stream_overlap_ns({}), 0);
  EXPECT_EQ(cross_stream_overlap_ns({on(7, 0, 100), on(13, 40, 40)}), 0);  // empty kernel
}

TEST(CrossStreamOverlap, TwoStreamsPartlyOverlapping) {
  EXPECT_EQ(cross_stream_overlap_ns({on(7, 1000, 1250), on(13, 1200, 1400)}), 50);
  // A second kernel of stream 7 inside the overlap does not count it twice.
  EXPECT_EQ(cross_stream_overlap_ns({on(7, 1000, 1250), on(7, 1210, 1240), on(13, 1200, 1400)}), 50);
  // The recorded-format fixture: vector_add on stream 7 and side_work on stream 13.
  EXPECT_EQ(cross_stream_overlap_ns(read_cupti_jsonl(kData / "cupti_sample.jsonl").kernels), 50);
  // Stream ids repeat across devices: (device, stream) is the stream.
  EXPECT_EQ(cross_stream_overlap_ns({on(7, 0, 100, 0), on(7, 60, 200, 1)}), 40);
}

TEST(CrossStreamOverlap, ThreeStreamsCountedOnceAtATime) {
  // s1 [0,100] s2 [50,150] s3 [140,300] s1 [250,260]:
  // two or more streams busy in [50,100] (s1+s2), [140,150] (s2+s3), [250,260] (s3+s1).
  EXPECT_EQ(cross_stream_overlap_ns({on(1, 0, 100), on(2, 50, 150), on(3, 140, 300), on(1, 250, 260)}), 70);
  // Two or more busy in [50,120], all three in [80,100]: that stretch counts once.
  EXPECT_EQ(cross_stream_overlap_ns({on(1, 0, 100), on(2, 50, 150), on(3, 80, 120)}), 70);
}

TEST(NcuCsv, ParsesAmongProfAndAppLines) {
  auto text = read_file(kData / "ncu_raw.csv");
  auto ks = parse_ncu_csv(text.view(), "ncu_raw.csv");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kernel_name, "vector_add(const float *, const float *, float *, unsigned long)");
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("dram__bytes_read.sum"), 536870912.0);  // "536,870,912"
  EXPECT_DOUBLE_EQ(ks[1].metrics.at("gpu__time_duration.sum"), 260000.0);
  auto t = ncu_totals(ks);
  EXPECT_DOUBLE_EQ(t.time_ns, 510000.0);
  EXPECT_DOUBLE_EQ(t.dram_bytes, 2 * 805306368.0);
  EXPECT_DOUBLE_EQ(t.flops, 2 * 67108864.0);
  EXPECT_TRUE(parse_ncu_csv("no csv here\n==PROF== x\n", "o").empty());
  EXPECT_THROW(parse_ncu_csv("\"ID\",\"Kernel Name\"\n\"0\"\n", "o"), Error);
  auto cmd = ncu_command({"./app", "5"}, {});
  EXPECT_EQ(cmd[0], "ncu");
  EXPECT_EQ(cmd[1], "--clock-control");
  EXPECT_EQ(cmd[2], "none");
  EXPECT_EQ(cmd.back(), "5");
}

TEST(NcuCsv, ScalesUnitsWhenNotBase) {
  std::string csv =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\"\n"
      "\"\",\"\",\"usecond\",\"Mbyte\"\n"
      "\"0\",\"k\",\"2.5\",\"3\"\n";
  auto ks = parse_ncu_csv(csv, "o");
  EXPECT_DOUBLE_EQ(ks.at(0).metrics.at("gpu__time_duration.sum"), 2500.0);
  EXPECT_DOUBLE_EQ(ks.at(0).metrics.at("dram__bytes_read.sum"), 3e6);
}

TEST(RocprofKernelTrace, RecordedOutput) {
  auto text = read_file(kData / "rocprof_kernel_trace.csv");
  auto ks = parse_rocprof_kernel_trace(text.view(), "rocprof_kernel_trace.csv");
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].duration_ns(), 250000);
  EXPECT_EQ(ks[0].grid[0], 262144);  // work-items / workgroup size
  EXPECT_EQ(ks[0].block[0], 256);
  EXPECT_EQ(ks[2].stream, 3);
  EXPECT_EQ(ks[2].shared_memory, 4096);
  EXPECT_EQ(busy_union_ns(ks), 250000 + 300000);
  EXPECT_THROW(parse_rocprof_kernel_trace("\"Kind\",\"Kernel_Name\"\n", "x"), Error);
  EXPECT_THROW(parse_rocprof_kernel_trace("\"Kernel_Name\",\"Start_Timestamp\",\"End_Timestamp\"\n\"k\",5,x\n", "x"),
               Error);
}

}  // namespace
}  // namespace magpie::profiler

namespace magpie::profiler {
namespace {

// Recorded on the H200 (docs/GPU_VALIDATION.md, run 2): `ncu --clock-control none --csv --page raw
// --print-units base -k regex:vector_add --launch-count 10` with the app's output mixed in.
TEST(NcuCsv, RecordedH200Output) {
  auto text = read_file(kData / "ncu_h200_vector_add.log");
  auto ks = parse_ncu_csv(text.view(), "ncu_h200_vector_add.log");
  ASSERT_EQ(ks.size(), 10u);
  for (const auto& k : ks) {
    EXPECT_EQ(k.kernel_name.rfind("vector_add(", 0), 0u) << k.kernel_name;
    EXPECT_GT(k.metrics.at("gpu__time_duration.sum"), 200e3);  // ns: ~234 us per launch
    EXPECT_LT(k.metrics.at("gpu__time_duration.sum"), 300e3);
  }
  auto t = ncu_totals(ks);
  EXPECT_NEAR(t.dram_bytes / 10, 805306368.0, 0.02 * 805306368.0);  // a, b read; c written
}

}  // namespace
}  // namespace magpie::profiler
