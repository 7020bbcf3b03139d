#include "serve/gpu_monitor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "core/file_io.hpp"
#include "report/csv_writer.hpp"

namespace magpie::serve {

namespace {

using Field = std::optional<double> gpu::DeviceSample::*;

const std::vector<std::pair<std::string, Field>>& field_members() {
  static const std::vector<std::pair<std::string, Field>> fields = {
      {"utilization_pct", &gpu::DeviceSample::utilization_pct},
      {"memory_used_mib", &gpu::DeviceSample::memory_used_mib},
      {"power_w", &gpu::DeviceSample::power_w},
      {"sm_clock_mhz", &gpu::DeviceSample::sm_clock_mhz},
      {"temperature_c", &gpu::DeviceSample::temperature_c}};
  return fields;
}

}  // namespace

const std::vector<std::string>& gpu_monitor_fields() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, member] : field_members()) out.push_back(name);
    return out;
  }();
  return names;
}

std::vector<GpuFieldSummary> summarize_gpu_samples(
    const std::vector<GpuSampleRow>& rows, const std::vector<std::pair<int, std::string>>& names) {
  std::map<int, GpuFieldSummary> by_gpu;
  for (const auto& [index, name] : names) {
    by_gpu[index].index = index;
    by_gpu[index].name = name;
  }
  std::map<int, std::map<std::string, double>> sums;
  for (const auto& row : rows) {
    auto& g = by_gpu[row.sample.index];
    g.index = row.sample.index;
    ++g.samples;
    for (const auto& [field, member] : field_members()) {
      const auto& value = row.sample.*member;
      if (!value) continue;
      auto& r = g.fields[field];
      if (r.count == 0) {
        r.min = r.max = *value;
      } else {
        r.min = std::min(r.min, *value);
        r.max = std::max(r.max, *value);
      }
      ++r.count;
      sums[g.index][field] += *value;
    }
  }
  std::vector<GpuFieldSummary> out;
  for (auto& [index, g] : by_gpu) {
    for (auto& [field, r] : g.fields) r.mean = sums[index][field] / static_cast<double>(r.count);
    out.push_back(std::move(g));
  }
  return out;
}

std::string gpu_samples_csv(const std::vector<GpuSampleRow>& rows) {
  report::CsvWriter csv;
  std::vector<std::string> header{"timestamp_s", "gpu"};
  for (const auto& f : gpu_monitor_fields()) header.push_back(f);
  csv.row(header);
  for (const auto& row : rows) {
    std::vector<std::string> cells{report::fixed(row.t_s, 3), std::to_string(row.sample.index)};
    for (const auto& [field, member] : field_members()) {
      const auto& value = row.sample.*member;
      cells.push_back(value ? fmt::format("{:g}", *value) : std::string());
    }
    csv.row(cells);
  }
  return csv.str();
}

GpuMonitor::GpuMonitor(const GpuMonitorConfig& config, std::vector<int> indices,
                       std::filesystem::path csv_path, const gpu::NvmlLibraries& libraries)
    : config_(config), csv_path_(std::move(csv_path)), sampler_(std::move(indices), libraries) {
  if (config_.interval_s <= 0) config_.interval_s = 2.0;
  if (sampler_.available()) thread_ = std::thread([this] { loop(); });
}

GpuMonitor::~GpuMonitor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuMonitor::loop() {
  const auto t0 = std::chrono::steady_clock::now();
  const auto interval = std::chrono::duration<double>(config_.interval_s);
  auto next = t0;
  std::unique_lock lock(mutex_);
  while (true) {
    lock.unlock();
    // NVML calls outside the lock: finish() never waits on a slow driver call
    // for longer than one round.
    auto samples = sampler_.sample();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    for (auto& s : samples) rows_.push_back({t, s});
    ++rounds_;
    if (stopping_) break;
    // A fixed grid from the start, so a slow sample does not stretch the interval.
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
    if (wake_.wait_until(lock, next, [this] { return stopping_; })) {
      // One last round after the stop so a short run still has its end state.
      lock.unlock();
      auto last = sampler_.sample();
      double t_end = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      lock.lock();
      for (auto& s : last) rows_.push_back({t_end, s});
      ++rounds_;
      break;
    }
  }
}

GpuMonitorSummary GpuMonitor::finish() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  GpuMonitorSummary s;
  s.interval_s = config_.interval_s;
  s.notes = sampler_.notes();
  if (!sampler_.available()) {
    s.reason = sampler_.unavailable_reason();
    return s;
  }
  s.available = true;
  s.samples = rounds_;
  s.gpus = summarize_gpu_samples(rows_, sampler_.devices());
  write_file_atomic(csv_path_, gpu_samples_csv(rows_));
  s.csv_path = csv_path_;
  return s;
}

}  // namespace magpie::serve
