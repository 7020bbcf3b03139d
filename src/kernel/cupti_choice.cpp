#include "kernel/cupti_choice.hpp"

#include <fmt/format.h>


namespace magpie::kernel {

bool needs_cupti_probe(const std::string& configured_kind, bool cupti_in_use) {
  return configured_kind == "auto" && cupti_in_use;
}

namespace {

CuptiChoice configured(const std::string& kind) {
  CuptiChoice c{kind, "config", "", std::nullopt};
  c.reason = kind == "serial"
                 ? "serial set by performance.cupti_kind or --cupti-kind: kernels are timed without CUPTI's "
                   "per-block instrumentation, but kernels of different streams no longer overlap"
                 : "concurrent set by performance.cupti_kind or --cupti-kind: kernels of different streams keep "
                   "overlapping, and per-kernel durations may include CUPTI's per-block instrumentation";
  return c;
}

}  // namespace

CuptiChoice choose_cupti_kind(const std::string& configured_kind, const std::vector<ProbeOutcome>& probes) {
  if (configured_kind != "auto") return configured(configured_kind);
  CuptiChoice c{"concurrent", "auto", "", std::nullopt};
  const ProbeOutcome* most = nullptr;  // the finished probe with the most overlap
  for (const auto& p : probes) {
    if (p.finished && (most == nullptr || p.cross_stream_overlap_ns > most->cross_stream_overlap_ns)) most = &p;
  }
  if (most == nullptr) {
    // Nothing known about the workload's streams: keep the library's default,
    // which at worst costs instrumentation overhead, never lost concurrency.
    c.reason = "concurrent kept because no first round finished (see the performance errors); per-kernel "
               "durations may include CUPTI's per-block instrumentation";
    return c;
  }
  c.probe_overlap_ns = most->cross_stream_overlap_ns;
  if (most->cross_stream_overlap_ns > kProbeOverlapThresholdNs) {
    c.reason = fmt::format(
        "concurrent kept because kernels on different streams overlapped ({} ns in {}'s first round), which "
        "serializing would change; per-kernel durations may then include CUPTI's per-block instrumentation",
        most->cross_stream_overlap_ns, most->id);
    return c;
  }
  // No concurrency to lose: pick the kind whose timestamps add less to the timed kernels.
  size_t kernels = 0;
  double blocks = 0;
  for (const auto& p : probes) {
    if (!p.finished) continue;
    kernels += p.timed_kernels;
    blocks += p.timed_blocks;
  }
  const double serial_cost = static_cast<double>(kernels) * kSerialCostPerKernelNs;
  const double concurrent_cost = blocks * kConcurrentCostPerBlockNs;
  const std::string no_overlap = fmt::format(
      "no kernels overlapped across streams in the first round{} (at most {} ns, within the {} ns allowed for "
      "timestamp skew)",
      probes.size() > 1 ? "s" : "", most->cross_stream_overlap_ns, kProbeOverlapThresholdNs);
  const std::string costs = fmt::format(
      "{} timed kernels with {:.0f} blocks: serial's timestamps would add ~{:.1f} us, concurrent's per-block "
      "instrumentation ~{:.1f} us",
      kernels, blocks, serial_cost / 1e3, concurrent_cost / 1e3);
  if (concurrent_cost < serial_cost) {
    c.reason = fmt::format("concurrent chosen: {}, and {}", no_overlap, costs);
    return c;
  }
  c.kind = "serial";
  c.reason = fmt::format("serial chosen: {}, so serializing changes nothing; {}", no_overlap, costs);
  return c;
}

CuptiChoice no_cupti_choice(const std::string& configured_kind, const std::string& why) {
  return {"", configured_kind == "auto" ? "auto" : "config", why, std::nullopt};
}

std::string describe(const CuptiChoice& choice) {
  if (choice.kind.empty()) return "CUPTI kernel timing: not used (" + choice.reason + ")";
  return fmt::format("CUPTI kernel timing: {} ({}): {}", choice.kind, choice.chosen_by, choice.reason);
}

}  // namespace magpie::kernel
