#pragma once
// `gpu_monitor:` (the benchmark's `profiler.gpu_monitor`, the kernel YAML's
// top-level `gpu_monitor`) — a background thread samples the GPUs (NVML
// through nvml_sampler) every interval while the run works, writes every
// sample to gpu_monitor.csv and summarises each field per GPU (min/mean/max)
// for the report's `gpu_monitor` block, with the clock-lowering (throttle)
// reasons seen while measuring. Without NVML the block says it is unavailable
// and why; the run carries on.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpu/nvml_sampler.hpp"

namespace magpie::gpu {

struct GpuMonitorConfig {
  bool enabled = false;
  double interval_s = 2.0;  // Magpie's interval_sec
};

// One sample of one GPU, `t_s` seconds after the monitor started.
struct GpuSampleRow {
  double t_s = 0;
  DeviceSample sample;
};

struct FieldRange {
  size_t count = 0;  // samples that reported the field
  double min = 0, mean = 0, max = 0;
};

struct GpuFieldSummary {
  int index = 0;
  std::string name;
  size_t samples = 0;
  // Keyed by the CSV column: utilization_pct, memory_used_mib, power_w, sm_clock_mhz,
  // temperature_c, mem_clock_mhz. A field no sample reported is absent.
  std::map<std::string, FieldRange> fields;
};

// Clock-lowering reasons (nvml_sampler's kThrottleReasonMask) one GPU showed
// in the measuring window.
struct ThrottleFinding {
  int index = 0;
  std::string name;
  size_t samples = 0;                     // samples of this GPU in the window that reported reasons
  size_t throttled = 0;                   // of those, samples with a throttle reason
  std::map<std::string, size_t> reasons;  // reason name → samples that had it
};

struct ThrottleWindow {
  bool marked = false;  // false: measuring_begin/end never called; the whole run counts
  double from_s = 0, to_s = 0;  // first span's start, last span's end
  // The measuring spans, in order: one for analyze/compare, one per case of a
  // serving sweep (each case's warm-ups and set-up fall between them).
  std::vector<std::pair<double, double>> spans;
  bool reasons_reported = false;      // the driver reports clocks event reasons at all
  std::vector<ThrottleFinding> gpus;  // every sampled GPU, throttled or not
  bool any() const {
    for (const auto& g : gpus)
      if (g.throttled > 0) return true;
    return false;
  }
};

struct GpuMonitorSummary {
  bool available = false;
  std::string reason;  // why not available
  double interval_s = 0;
  size_t samples = 0;  // sampling rounds
  std::filesystem::path csv_path;
  std::vector<GpuFieldSummary> gpus;
  ThrottleWindow throttle;
  std::vector<std::string> notes;  // fields the driver lacks, sampling failures
};

// "GPU 0 (NVIDIA H200): clocks lowered in 3 of 5 samples while measuring (sw_power_cap 3)",
// one line per throttled GPU; empty when none was.
std::vector<std::string> throttle_warnings(const ThrottleWindow& window);

// The numeric CSV columns after `timestamp_s,gpu`, in order (then clocks_event_reasons).
const std::vector<std::string>& gpu_monitor_fields();

// Pure: per GPU, min/mean/max of each field over the rows that reported it.
std::vector<GpuFieldSummary> summarize_gpu_samples(
    const std::vector<GpuSampleRow>& rows, const std::vector<std::pair<int, std::string>>& names);

// Pure: per GPU, the samples in [from_s, to_s] that carry a throttle reason.
ThrottleWindow find_throttling(const std::vector<GpuSampleRow>& rows,
                               const std::vector<std::pair<int, std::string>>& names, double from_s,
                               double to_s);
// Pure: the same over several [from, to] spans (ordered, not overlapping);
// a sample counts once, in the span that holds it.
ThrottleWindow find_throttling(const std::vector<GpuSampleRow>& rows,
                               const std::vector<std::pair<int, std::string>>& names,
                               const std::vector<std::pair<double, double>>& spans);

// gpu_monitor.csv's text for these rows (empty cell = field not reported;
// clocks_event_reasons as names joined by '|', "none" for no reason).
std::string gpu_samples_csv(const std::vector<GpuSampleRow>& rows);

class GpuMonitor {
 public:
  // Opens NVML for `indices` (empty = every GPU) and starts sampling at once.
  GpuMonitor(const GpuMonitorConfig& config, std::vector<int> indices,
             std::filesystem::path csv_path, const NvmlLibraries& libraries = {});
  ~GpuMonitor();  // stops the thread
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // The measuring window (timing rounds; a serving case's measured requests):
  // each takes a sample at once, so a window shorter than the interval still
  // has samples; throttle reasons are judged over it. Called again, a new span
  // opens (a sweep's next case); a span never ended lasts to the last sample.
  // Without them, over the whole run. From one thread (the one that calls finish).
  void measuring_begin();
  void measuring_end();

  // Stops sampling (one last sample), writes the CSV and returns the summary. Once.
  GpuMonitorSummary finish();

 private:
  void loop();
  double now_s() const;
  void sample_now();  // from the caller's thread (NVML is thread-safe)

  GpuMonitorConfig config_;
  std::filesystem::path csv_path_;
  NvmlSampler sampler_;
  std::vector<GpuSampleRow> rows_;
  size_t rounds_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::vector<std::pair<double, std::optional<double>>> measuring_spans_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace magpie::gpu
