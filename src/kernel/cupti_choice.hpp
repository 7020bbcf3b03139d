#pragma once
// Which CUPTI activity kind the performance rounds use, and why.
//
// libmagpie_cupti.so reads MAGPIE_CUPTI_KIND. concurrent (CONCURRENT_KERNEL)
// lets kernels of different streams overlap, but on Hopper CUPTI instruments
// every thread block to stamp start/end: a 262,144-block vector_add ran ~6%
// slower (docs/gpu_validation/run3_cupti_modes.log). serial (KERNEL) times
// kernels without patching them but serializes them across streams, and its
// timestamps add a fixed ~1.6 us to every kernel (a 18 us softmax read 20.8 us
// serial, 19.3 us concurrent; docs/gpu_validation/run4_cupti_kind.log). With
// `auto`, one probe round per implementation runs with concurrent; concurrent is
// kept when kernels of different streams overlapped in some probe, or when the
// timed kernels' blocks cost less instrumentation than serial's fixed cost.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace magpie::kernel {

// Cross-stream overlap at or below this (total per probe round) counts as none:
// back-to-back kernels on different streams (one waiting for the other) can show
// a sliver of apparent overlap from timestamp skew that is not concurrency.
inline constexpr int64_t kProbeOverlapThresholdNs = 1000;

// What each kind adds to a kernel's recorded duration on an H200 (run3/run4
// logs in docs/gpu_validation): serial a fixed ~1.6 us per kernel; concurrent
// ~56 ps per thread block (vector_add, 262,144 blocks: +14.6 us). Other GPUs are
// assumed alike until measured.
inline constexpr double kSerialCostPerKernelNs = 1600;
inline constexpr double kConcurrentCostPerBlockNs = 0.056;

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
  size_t timed_kernels = 0;  // the kernels being timed (not the harness's flush/spin)
  double timed_blocks = 0;   // their thread blocks, summed
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
