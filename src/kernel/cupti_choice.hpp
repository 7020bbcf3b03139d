#pragma once
// Which CUPTI activity kind the performance rounds use, and why.
//
// libmagpie_cupti.so reads MAGPIE_CUPTI_KIND. concurrent (CONCURRENT_KERNEL)
// lets kernels of different streams overlap, but on Hopper CUPTI instruments
// every thread block to stamp start/end: a 262,144-block vector_add ran ~6%
// slower (docs/gpu_validation/run3_cupti_modes.log). serial (KERNEL) times
// kernels untouched but serializes them across streams. With `auto`, one probe
// round per implementation runs with concurrent, and serial is chosen unless
// kernels of different streams overlapped in some probe.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace magpie::kernel {

// Cross-stream overlap at or below this (total per probe round) counts as none:
// back-to-back kernels on different streams (one waiting for the other) can show
// a sliver of apparent overlap from timestamp skew that is not concurrency.
inline constexpr int64_t kProbeOverlapThresholdNs = 1000;

struct CuptiChoice {
  std::string kind;       // concurrent | serial; "" = the rounds run without the CUPTI library
  std::string chosen_by;  // auto | config
  std::string reason;
  std::optional<int64_t> probe_overlap_ns;  // the largest over the probe rounds; none without a probe
};

// One implementation's probe round.
struct ProbeOutcome {
  std::string id;
  bool finished = false;  // the probe command ran to completion
  int64_t cross_stream_overlap_ns = 0;
};

// auto needs probe rounds only when the CUPTI library is in use.
bool needs_cupti_probe(const std::string& configured_kind, bool cupti_in_use);

// The kind for all implementations: an explicit `configured_kind` as it is, or
// auto decided from the probe rounds (the same for all, as compare requires).
CuptiChoice choose_cupti_kind(const std::string& configured_kind, const std::vector<ProbeOutcome>& probes);

// For rounds without the library: kind "", `why` as the reason.
CuptiChoice no_cupti_choice(const std::string& configured_kind, const std::string& why);

// One line for stdout, e.g. "CUPTI kernel timing: serial (auto): ...".
std::string describe(const CuptiChoice& choice);

}  // namespace magpie::kernel
