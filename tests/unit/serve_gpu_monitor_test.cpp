// gpu_monitor: aggregation of samples, the CSV, and the monitor thread on a
// real driver when there is one, else on the stand-in libnvidia-ml
// (tests/unit/fakes, whose GPUs report clocks, temperature and memory but no
// power or utilization, as a driver lacking those entry points would), and
// with no NVML at all.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "serve/gpu_monitor.hpp"

namespace magpie::serve {
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
  EXPECT_EQ(text,
            "timestamp_s,gpu,utilization_pct,memory_used_mib,power_w,sm_clock_mhz,temperature_c\r\n"
            "0.250,0,10,,,,\r\n");  // RFC 4180 line ends (report::CsvWriter)
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
}  // namespace magpie::serve
