#include "gpu/datasheet_json.hpp"

namespace magpie::gpu {
namespace {

using nlohmann::json;

json figure(const Figure& f) {
  if (!f.known()) return {{"value", nullptr}, {"source", f.source}};
  return {{"value", f.value}, {"source", f.source}};
}

}  // namespace

json spec_json(const GpuSpec& s) {
  json peaks = json::array();
  for (const auto& p : s.peaks) {
    peaks.push_back({{"precision", to_string(p.precision)},
                     {"unit", to_string(p.unit)},
                     {"tflops", p.tflops.value},
                     {"source", p.tflops.source}});
  }
  return {{"name", s.name},
          {"aliases", s.aliases},
          {"vendor", to_string(s.vendor)},
          {"arch", s.arch},
          {"compute_capability",
           std::to_string(s.compute_major) + "." + std::to_string(s.compute_minor)},
          {"form_factor", s.form_factor},
          {"variant_of", s.variant_of.empty() ? json(nullptr) : json(s.variant_of)},
          {"devices_per_package", s.devices_per_package},
          {"compute_units", figure(s.compute_units)},
          {"memory_gb", figure(s.memory_gb)},
          {"memory_type", s.memory_type},
          {"memory_bandwidth_tbps", figure(s.memory_bandwidth_tbps)},
          {"boost_clock_mhz", figure(s.boost_clock_mhz)},
          {"tdp_w", figure(s.tdp_w)},
          {"interconnect", s.interconnect},
          {"interconnect_gbps", figure(s.interconnect_gbps)},
          {"peaks", peaks},
          {"note", s.note}};
}

json device_datasheet_json(const DeviceStatus& d) {
  auto match = find_spec_for_device(d.name, static_cast<int64_t>(d.memory_total));
  const GpuSpec* spec = match.spec;
  std::string why = match.reason;
  if (spec == nullptr && !d.arch.empty()) {
    if ((spec = find_spec(d.arch)) != nullptr)
      why = "architecture " + d.arch + " names " + spec->name;
  }
  if (spec == nullptr) {
    const double bw = driver_memory_bandwidth_tbps(d);
    return {{"entry", nullptr},
            {"match", why},
            {"figures_from", "driver"},
            {"memory_bandwidth_tbps", bw > 0 ? json(bw) : json(nullptr)},
            {"peak_bf16_tflops", nullptr}};
  }
  const double per = 1.0 / spec->devices_per_package;
  auto bf16 = spec->peak(Precision::kBf16, ExecUnit::kMatrix);
  return {{"entry", spec_json(*spec)},
          {"match", why},
          {"figures_from", "datasheet"},
          {"memory_bandwidth_tbps", spec->memory_bandwidth_tbps.value * per},
          {"peak_bf16_tflops", bf16 ? json(bf16->value * per) : json(nullptr)}};
}

}  // namespace magpie::gpu
