#pragma once
// `profiler.gpu_monitor:` — a background thread samples the GPUs (NVML through
// src/gpu) every interval while the benchmark runs, writes every sample to
// gpu_monitor.csv and summarises each field per GPU (min/mean/max) for the
// report's `gpu_monitor` block. Without NVML the block says it is unavailable
// and why; the run carries on.
#include <atomic>
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

namespace magpie::serve {

struct GpuMonitorConfig {
  bool enabled = false;
  double interval_s = 2.0;  // Magpie's interval_sec
};

// One sample of one GPU, `t_s` seconds after the monitor started.
struct GpuSampleRow {
  double t_s = 0;
  gpu::DeviceSample sample;
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
  // temperature_c. A field no sample reported is absent.
  std::map<std::string, FieldRange> fields;
};

struct GpuMonitorSummary {
  bool available = false;
  std::string reason;  // why not available
  double interval_s = 0;
  size_t samples = 0;  // sampling rounds
  std::filesystem::path csv_path;
  std::vector<GpuFieldSummary> gpus;
  std::vector<std::string> notes;  // fields the driver lacks, sampling failures
};

// The CSV columns after `timestamp_s,gpu`, in order.
const std::vector<std::string>& gpu_monitor_fields();

// Pure: per GPU, min/mean/max of each field over the rows that reported it.
std::vector<GpuFieldSummary> summarize_gpu_samples(
    const std::vector<GpuSampleRow>& rows, const std::vector<std::pair<int, std::string>>& names);

// gpu_monitor.csv's text for these rows (empty cell = field not reported).
std::string gpu_samples_csv(const std::vector<GpuSampleRow>& rows);

class GpuMonitor {
 public:
  // Opens NVML for `indices` (empty = every GPU) and starts sampling at once.
  GpuMonitor(const GpuMonitorConfig& config, std::vector<int> indices,
             std::filesystem::path csv_path, const gpu::NvmlLibraries& libraries = {});
  ~GpuMonitor();  // stops the thread
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // Stops sampling (one last sample), writes the CSV and returns the summary. Once.
  GpuMonitorSummary finish();

 private:
  void loop();

  GpuMonitorConfig config_;
  std::filesystem::path csv_path_;
  gpu::NvmlSampler sampler_;
  std::vector<GpuSampleRow> rows_;
  size_t rounds_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace magpie::serve
