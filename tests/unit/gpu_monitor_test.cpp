// gpu_monitor: aggregation of samples, the CSV, and the monitor thread on a
// real driver when there is one, else on the stand-in libnvidia-ml
// (tests/unit/fakes, whose GPUs report clocks, temperature and memory but no
// power or utilization, as a driver lacking those entry points would), and
// with no NVML at all.
#include "gpu/gpu_monitor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace magpie::gpu {
namespace {

namespace fs = std::filesystem;

GpuSampleRow row(double t, int gpu, std::optional<double> util, std::optional<double> sm) {
  GpuSampleRow r;
  r.t_s = t;
  r.sample.index = gpu;
  r.sample.utilization_pct = util;
  r.sample.sm_clock_mhz = sm;
  return r;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GpuMonitor, SummarizesEachFieldPerGpu) {
  std::vector<GpuSampleRow> rows{row(0, 0, 10, 1000), row(0, 1, 50, std::nullopt),
                                 row(1, 0, 30, 1980), row(1, 1, std::nullopt, std::nullopt),
                                 row(2, 0, 80, 1500)};
  auto s = summarize_gpu_samples(rows, {{0, "A"}, {1, "B"}, {2, "C"}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "A");
  EXPECT_EQ(s[0].samples, 3u);
  const auto& u = s[0].fields.at("utilization_pct");
  EXPECT_EQ(u.count, 3u);
  EXPECT_DOUBLE_EQ(u.min, 10);
  EXPECT_DOUBLE_EQ(u.max, 80);
  EXPECT_DOUBLE_EQ(u.mean, 40);
  EXPECT_DOUBLE_EQ(s[0].fields.at("sm_clock_mhz").mean, (1000 + 1980 + 1500) / 3.0);
  // GPU 1 reported utilization once and no clock: the mean is over that one sample.
  EXPECT_EQ(s[1].samples, 2u);
  EXPECT_DOUBLE_EQ(s[1].fields.at("utilization_pct").mean, 50);
  EXPECT_EQ(s[1].fields.count("sm_clock_mhz"), 0u);
  // A named GPU with no samples is listed with none.
  EXPECT_EQ(s[2].samples, 0u);
  EXPECT_TRUE(s[2].fields.empty());
}

TEST(GpuMonitor, CsvHasOneRowPerSampleAndEmptyCellsForMissingFields) {
  auto text = gpu_samples_csv({row(0.25, 0, 10, std::nullopt)});
  auto idle = row(0.5, 0, 0, 1980);
  idle.sample.clocks_event_reasons = 0;
  auto capped = row(0.75, 0, 99, 1500);
  capped.sample.clocks_event_reasons = 0x4 | 0x40;
  text = gpu_samples_csv({row(0.25, 0, 10, std::nullopt), idle, capped});
  EXPECT_EQ(text,
            "timestamp_s,gpu,utilization_pct,memory_used_mib,power_w,sm_clock_mhz,temperature_c,"
            "mem_clock_mhz,clocks_event_reasons\r\n"
            "0.250,0,10,,,,,,\r\n"  // RFC 4180 line ends (report::CsvWriter)
            "0.500,0,0,,,1980,,,none\r\n"
            "0.750,0,99,,,1500,,,sw_power_cap|hw_thermal_slowdown\r\n");
}

TEST(GpuMonitor, ReasonNamesFollowNvmlBits) {
  EXPECT_EQ(clocks_event_reason_names(0x1 | 0x4 | 0x80),
            (std::vector<std::string>{"gpu_idle", "sw_power_cap", "hw_power_brake_slowdown"}));
  EXPECT_EQ(clocks_event_reason_names(uint64_t{1} << 40), (std::vector<std::string>{"bit_40"}));
  EXPECT_TRUE(clocks_event_reason_names(0).empty());
}

TEST(GpuMonitor, ThrottlingCountsOnlyLoweringReasonsInsideTheWindow) {
  auto at = [](double t, int gpu, uint64_t reasons) {
    GpuSampleRow r;
    r.t_s = t;
    r.sample.index = gpu;
    r.sample.clocks_event_reasons = reasons;
    return r;
  };
  // GPU 0: idle before, power-capped twice while measuring, thermal after.
  // GPU 1: sync boost and idle only (not lowering clocks below what was asked).
  std::vector<GpuSampleRow> rows{at(0.0, 0, 0x1), at(1.0, 0, 0x4),  at(1.5, 0, 0x4 | 0x1),
                                 at(2.0, 0, 0x0), at(3.0, 0, 0x20), at(1.2, 1, 0x10),
                                 at(1.8, 1, 0x1)};
  auto w = find_throttling(rows, {{0, "A"}, {1, "B"}}, 1.0, 2.0);
  ASSERT_EQ(w.gpus.size(), 2u);
  EXPECT_TRUE(w.reasons_reported);
  EXPECT_TRUE(w.any());
  EXPECT_EQ(w.gpus[0].samples, 3u);
  EXPECT_EQ(w.gpus[0].throttled, 2u);
  EXPECT_EQ(w.gpus[0].reasons, (std::map<std::string, size_t>{{"sw_power_cap", 2}}));
  EXPECT_EQ(w.gpus[1].throttled, 0u);
  w.marked = true;
  auto lines = throttle_warnings(w);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind(
                "GPU 0 (A): clocks lowered in 2 of 3 samples while measuring (sw_power_cap 2)", 0),
            0u)
      << lines[0];
  // A driver without the reasons: nothing reported, nothing claimed.
  GpuSampleRow plain;
  plain.t_s = 1.5;
  auto none = find_throttling({plain}, {{0, "A"}}, 1.0, 2.0);
  EXPECT_FALSE(none.reasons_reported);
  EXPECT_FALSE(none.any());
}

TEST(GpuMonitor, SeveralSpansCountOnlyTheSamplesInsideThem) {
  auto at = [](double t, uint64_t reasons) {
    GpuSampleRow r;
    r.t_s = t;
    r.sample.index = 0;
    r.sample.clocks_event_reasons = reasons;
    return r;
  };
  // Two serving cases measured over [1, 2] and [4, 5]; the thermal slowdown at
  // 3.0 falls in the second case's warm-up, between the spans.
  std::vector<GpuSampleRow> rows{at(0.5, 0x4), at(1.0, 0x0), at(2.0, 0x4), at(3.0, 0x20),
                                 at(4.0, 0x0), at(4.5, 0x4), at(5.0, 0x0), at(6.0, 0x20)};
  auto w = find_throttling(rows, {{0, "A"}}, {{1.0, 2.0}, {4.0, 5.0}});
  EXPECT_DOUBLE_EQ(w.from_s, 1.0);
  EXPECT_DOUBLE_EQ(w.to_s, 5.0);
  ASSERT_EQ(w.spans.size(), 2u);
  ASSERT_EQ(w.gpus.size(), 1u);
  EXPECT_EQ(w.gpus[0].samples, 5u);
  EXPECT_EQ(w.gpus[0].throttled, 2u);
  EXPECT_EQ(w.gpus[0].reasons, (std::map<std::string, size_t>{{"sw_power_cap", 2}}));
  // The one-span form is the same judgement over [from, to].
  auto one = find_throttling(rows, {{0, "A"}}, 1.0, 5.0);
  EXPECT_EQ(one.spans, (std::vector<std::pair<double, double>>{{1.0, 5.0}}));
  EXPECT_EQ(one.gpus[0].samples, 6u);
  EXPECT_EQ(one.gpus[0].reasons.at("sw_thermal_slowdown"), 1u);
}

TEST(GpuMonitor, EachBeginOpensASpanAndAnOpenOneEndsAtTheLastSample) {
  auto csv = fs::temp_directory_path() / "magpie_gpu_monitor_spans.csv";
  GpuMonitor m({true, 60.0}, {0}, csv, {MAGPIE_FAKE_NVML_PATH, ""});
  m.measuring_begin();
  m.measuring_end();
  m.measuring_end();  // a second end without a begin changes nothing
  m.measuring_begin();
  auto s = m.finish();
  ASSERT_TRUE(s.available) << s.reason;
  EXPECT_TRUE(s.throttle.marked);
  ASSERT_EQ(s.throttle.spans.size(), 2u);
  EXPECT_LE(s.throttle.spans[0].first, s.throttle.spans[0].second);
  EXPECT_LE(s.throttle.spans[0].second, s.throttle.spans[1].first);
  EXPECT_GE(s.throttle.spans[1].second, s.throttle.spans[1].first);
  EXPECT_DOUBLE_EQ(s.throttle.to_s, s.throttle.spans[1].second);
  ASSERT_EQ(s.throttle.gpus.size(), 1u);
  EXPECT_GE(s.throttle.gpus[0].samples, 3u);    // begin, end, begin
  EXPECT_EQ(s.throttle.gpus[0].throttled, 0u);  // the stand-in is idle (gpu_idle is not throttling)
  fs::remove(csv);
}

TEST(GpuMonitor, TheMeasuringWindowHasSamplesEvenWhenShorterThanTheInterval) {
  auto csv = fs::temp_directory_path() / "magpie_gpu_monitor_window.csv";
  ::setenv("MAGPIE_FAKE_NVML_CLOCKS_EVENT_REASONS", "0x4", 1);  // the stand-in reports a power cap
  GpuMonitor m({true, 60.0}, {0}, csv, {MAGPIE_FAKE_NVML_PATH, ""});
  m.measuring_begin();
  m.measuring_end();
  auto s = m.finish();
  ::unsetenv("MAGPIE_FAKE_NVML_CLOCKS_EVENT_REASONS");
  ASSERT_TRUE(s.available) << s.reason;
  EXPECT_TRUE(s.throttle.marked);
  ASSERT_EQ(s.throttle.gpus.size(), 1u);
  EXPECT_GE(s.throttle.gpus[0].samples, 2u);  // begin's and end's, whatever the thread did
  EXPECT_EQ(s.throttle.gpus[0].throttled, s.throttle.gpus[0].samples);
  EXPECT_EQ(s.throttle.gpus[0].reasons.count("sw_power_cap"), 1u);
  auto text = read(csv);
  EXPECT_NE(text.find(",sw_power_cap\r\n"), std::string::npos) << text;
  fs::remove(csv);
}

TEST(GpuMonitor, NoNvmlIsUnavailableWithTheReason) {
  auto csv = fs::temp_directory_path() / "magpie_gpu_monitor_none.csv";
  GpuMonitor m({true, 0.05}, {}, csv, {"libnvidia-ml-absent.so.1", ""});
  auto s = m.finish();
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("NVML not found (libnvidia-ml-absent.so.1)"), std::string::npos)
      << s.reason;
  EXPECT_FALSE(fs::exists(csv));
}

TEST(GpuMonitor, SamplesTheStandInDriverInTheBackground) {
  auto csv = fs::temp_directory_path() / "magpie_gpu_monitor_fake.csv";
  fs::remove(csv);
  GpuMonitor m({true, 0.02}, {1}, csv, {MAGPIE_FAKE_NVML_PATH, ""});
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto s = m.finish();
  ASSERT_TRUE(s.available) << s.reason;
  EXPECT_GE(s.samples, 2u);  // the first round, at least one more, and the last one after the stop
  ASSERT_EQ(s.gpus.size(), 1u);  // only the GPU asked for
  const auto& g = s.gpus.front();
  EXPECT_EQ(g.index, 1);
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.samples, s.samples);
  EXPECT_DOUBLE_EQ(g.fields.at("sm_clock_mhz").max, 345);
  EXPECT_DOUBLE_EQ(g.fields.at("temperature_c").mean, 31);
  EXPECT_DOUBLE_EQ(g.fields.at("memory_used_mib").min, 1);
  EXPECT_DOUBLE_EQ(g.fields.at("mem_clock_mhz").max, 3201);
  EXPECT_FALSE(s.throttle.marked);  // no measuring window: the whole run counts
  EXPECT_TRUE(s.throttle.reasons_reported);
  EXPECT_FALSE(s.throttle.any());            // the stand-in is idle
  EXPECT_EQ(g.fields.count("power_w"), 0u);  // the stand-in has no nvmlDeviceGetPowerUsage
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n.find("power_w") != std::string::npos;
  EXPECT_TRUE(noted);
  auto text = read(csv);
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), s.samples + 1);
  fs::remove(csv);
}

TEST(GpuMonitor, AGpuThatIsNotThereIsANoteNotACrash) {
  auto csv = fs::temp_directory_path() / "magpie_gpu_monitor_fake7.csv";
  GpuMonitor m({true, 0.02}, {0, 7}, csv, {MAGPIE_FAKE_NVML_PATH, ""});
  auto s = m.finish();
  ASSERT_TRUE(s.available);
  EXPECT_EQ(s.gpus.size(), 1u);
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n.find("GPU 7: not present") != std::string::npos;
  EXPECT_TRUE(noted);
  fs::remove(csv);
}

TEST(GpuMonitor, RealDriverWhenPresent) {
  auto csv = fs::temp_directory_path() / "magpie_gpu_monitor_real.csv";
  GpuMonitor m({true, 0.05}, {}, csv);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  auto s = m.finish();
  if (!s.available) GTEST_SKIP() << "no NVIDIA driver here: " << s.reason;
  ASSERT_FALSE(s.gpus.empty());
  for (const auto& g : s.gpus) {
    EXPECT_TRUE(g.fields.count("sm_clock_mhz")) << "GPU " << g.index;
    EXPECT_TRUE(g.fields.count("power_w")) << "GPU " << g.index;
  }
  fs::remove(csv);
}

}  // namespace
}  // namespace magpie::gpu
