#pragma once
// The rules: typed observations → bottlenecks, and bottlenecks → suggestions.
// Pure functions with fixed thresholds, each one explained in docs/SUGGESTIONS.md.
#include <optional>
#include <vector>

#include "advice/observations.hpp"
#include "advice/suggestions.hpp"

namespace magpie::advice {

// Below this % of its roof a kernel is limited by neither memory nor compute
// (latency, occupancy, too little parallel work).
inline constexpr double kLowRoofPct = 10;
// At or above this % of its roof the kernel is close to it: only doing less
// work (fewer bytes, fewer or cheaper FLOPs) helps much more.
inline constexpr double kNearRoofPct = 60;
// Host cost of one kernel launch (cudaLaunchKernel ≈ 3–5 µs, a PyTorch eager op
// ≈ 10–20 µs); kernels shorter than this are "short".
inline constexpr double kLaunchCostUs = 10;
// Launches a trace stage must have before the launch rule speaks.
inline constexpr double kMinTraceLaunches = 100;
// Severity floors: below them a finding is not worth a line.
inline constexpr double kMinLaunchSeverity = 0.05;
inline constexpr double kMinExposedCommShare = 0.05;
inline constexpr double kMinIdleShare = 0.10;
inline constexpr double kMinRooflineSeverity = 0.01;
// Severity when a kernel is on one side of the ridge but its % of roof is unknown.
inline constexpr double kUnknownHeadroomSeverity = 0.5;
// A gap-report kernel at least this share of GPU time gets a category hint.
inline constexpr double kHotKernelPct = 10;

// Ridge points (FLOP/byte) bracketing the built-in GPUs' fp32 vector peaks over
// their memory bandwidth: below `low` a kernel is memory-bound on every one of
// them, above `high` compute-bound on every one.
struct RidgeBand {
  double low = 0, high = 0;
};
RidgeBand fp32_ridge_band();

// Memory-, compute- or latency-bound, or nullopt (not enough figures, or below
// kMinRooflineSeverity). `no_data` is set instead when the figures cannot place it.
std::optional<Bottleneck> roofline_bottleneck(const RooflineObservation& o,
                                              std::optional<Bottleneck>* no_data = nullptr);

std::optional<Bottleneck> launch_bottleneck(const LaunchObservation& o);

// Exposed communication and idle time of one timeline.
std::vector<Bottleneck> timeline_bottlenecks(const TimelineObservation& o);

// nullopt when compile and correctness both succeeded.
std::optional<Bottleneck> correctness_bottleneck(const CorrectnessObservation& o);

// What to try for one bottleneck (at most three), with its priority.
std::vector<Suggestion> suggestions_for(const Bottleneck& b, int priority);

// A hint for a hot kernel by its category (gemm, attention, ...); nullopt when none fits.
std::optional<Suggestion> hot_kernel_hint(const HotKernel& k, int priority);

}  // namespace magpie::advice
