#include "gpu/gpu_monitor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "core/file_io.hpp"
#include "report/csv_writer.hpp"

namespace magpie::gpu {

namespace {

using Field = std::optional<double> DeviceSample::*;

const std::vector<std::pair<std::string, Field>>& field_members() {
  static const std::vector<std::pair<std::string, Field>> fields = {
      {"utilization_pct", &DeviceSample::utilization_pct},
      {"memory_used_mib", &DeviceSample::memory_used_mib},
      {"power_w", &DeviceSample::power_w},
      {"sm_clock_mhz", &DeviceSample::sm_clock_mhz},
      {"temperature_c", &DeviceSample::temperature_c},
      {"mem_clock_mhz", &DeviceSample::mem_clock_mhz}};
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

ThrottleWindow find_throttling(const std::vector<GpuSampleRow>& rows,
                               const std::vector<std::pair<int, std::string>>& names, double from_s,
                               double to_s) {
  return find_throttling(rows, names, {{from_s, to_s}});
}

ThrottleWindow find_throttling(const std::vector<GpuSampleRow>& rows,
                               const std::vector<std::pair<int, std::string>>& names,
                               const std::vector<std::pair<double, double>>& spans) {
  ThrottleWindow w;
  w.spans = spans;
  if (!spans.empty()) {
    w.from_s = spans.front().first;
    w.to_s = spans.back().second;
  }
  auto measuring = [&spans](double t) {
    return std::any_of(spans.begin(), spans.end(),
                       [t](const auto& s) { return t >= s.first && t <= s.second; });
  };
  std::map<int, ThrottleFinding> by_gpu;
  for (const auto& [index, name] : names) by_gpu[index].index = index, by_gpu[index].name = name;
  for (const auto& row : rows) {
    if (!measuring(row.t_s) || !row.sample.clocks_event_reasons) continue;
    w.reasons_reported = true;
    auto& g = by_gpu[row.sample.index];
    g.index = row.sample.index;
    ++g.samples;
    const uint64_t lowering = *row.sample.clocks_event_reasons & kThrottleReasonMask;
    if (lowering == 0) continue;
    ++g.throttled;
    for (const auto& reason : clocks_event_reason_names(lowering)) ++g.reasons[reason];
  }
  for (auto& [index, g] : by_gpu) w.gpus.push_back(std::move(g));
  return w;
}

std::vector<std::string> throttle_warnings(const ThrottleWindow& window) {
  std::vector<std::string> out;
  for (const auto& g : window.gpus) {
    if (g.throttled == 0) continue;
    std::vector<std::string> reasons;
    for (const auto& [name, n] : g.reasons) reasons.push_back(fmt::format("{} {}", name, n));
    out.push_back(fmt::format(
        "GPU {}{}: clocks lowered in {} of {} samples {} ({}); timings may be slower "
        "than the GPU can run",
        g.index, g.name.empty() ? "" : " (" + g.name + ")", g.throttled, g.samples,
        window.marked ? "while measuring" : "during the run", fmt::join(reasons, ", ")));
  }
  return out;
}

std::string gpu_samples_csv(const std::vector<GpuSampleRow>& rows) {
  report::CsvWriter csv;
  std::vector<std::string> header{"timestamp_s", "gpu"};
  for (const auto& f : gpu_monitor_fields()) header.push_back(f);
  header.emplace_back("clocks_event_reasons");
  csv.row(header);
  for (const auto& row : rows) {
    std::vector<std::string> cells{report::fixed(row.t_s, 3), std::to_string(row.sample.index)};
    for (const auto& [field, member] : field_members()) {
      const auto& value = row.sample.*member;
      cells.push_back(value ? fmt::format("{:g}", *value) : std::string());
    }
    if (!row.sample.clocks_event_reasons) {
      cells.emplace_back();
    } else {
      auto names = clocks_event_reason_names(*row.sample.clocks_event_reasons);
      cells.push_back(names.empty() ? std::string("none")
                                    : fmt::format("{}", fmt::join(names, "|")));
    }
    csv.row(cells);
  }
  return csv.str();
}

GpuMonitor::GpuMonitor(const GpuMonitorConfig& config, std::vector<int> indices,
                       std::filesystem::path csv_path, const NvmlLibraries& libraries)
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

double GpuMonitor::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void GpuMonitor::sample_now() {
  if (!sampler_.available()) return;
  auto samples = sampler_.sample();
  double t = now_s();
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  for (auto& s : samples) rows_.push_back({t, s});
  ++rounds_;
}

void GpuMonitor::measuring_begin() {
  measuring_spans_.emplace_back(now_s(), std::nullopt);
  sample_now();
}

void GpuMonitor::measuring_end() {
  if (measuring_spans_.empty() || measuring_spans_.back().second) return;  // no open span
  sample_now();
  measuring_spans_.back().second = now_s();
}

void GpuMonitor::loop() {
  const auto t0 = t0_;
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
  // Samples taken by measuring_begin/end land between the thread's: order by time.
  std::stable_sort(rows_.begin(), rows_.end(),
                   [](const GpuSampleRow& a, const GpuSampleRow& b) { return a.t_s < b.t_s; });
  s.gpus = summarize_gpu_samples(rows_, sampler_.devices());
  const double last_t = rows_.empty() ? 0.0 : rows_.back().t_s;
  const bool marked = !measuring_spans_.empty();
  std::vector<std::pair<double, double>> spans;
  for (const auto& [from, to] : measuring_spans_) spans.emplace_back(from, to.value_or(last_t));
  if (!marked) spans.emplace_back(0.0, last_t);  // the whole run
  s.throttle = find_throttling(rows_, sampler_.devices(), spans);
  s.throttle.marked = marked;
  write_file_atomic(csv_path_, gpu_samples_csv(rows_));
  s.csv_path = csv_path_;
  return s;
}

}  // namespace magpie::gpu
