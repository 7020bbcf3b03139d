#pragma once
// What-if by re-timing the dependency graph: change some nodes' costs or cut
// some edges, compute the earliest times again, and read the new end-to-end
// time of every window. Nothing is subtracted: work that was hidden behind
// other work stays hidden, and work that becomes the bottleneck shows.
//
// Scenario syntax (docs/CRITICAL_PATH.md, `magpie whatif --help`):
//   op:NAME:2x        GPU work launched inside op NAME (any depth) 2x faster
//   op:NAME:+30us     each call of op NAME adds 30 us of GPU time after its last GPU work
//   kernel:TEXT:1.5x  kernels whose name contains TEXT 1.5x faster (+Dus: each longer)
//   cpu:2x            all host time 2x faster (op self time, launch calls, untraced host time)
//   cpu:NAME:2x       host time inside op NAME 2x faster
//   launch:0          launch overhead removed, as with CUDA graphs (alias: graph)
//   sync:0            blocking syncs wait for nothing (alias: nosync)
//   wait:0            the other ranks arrive at each collective with this one
//                     (needs linked ranks, critical_path_ranks.hpp; alias: nowait)
// Factors: 2x, 0.5x (slower), inf (takes no time). Durations: ns, us, ms, s.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/critical_path.hpp"

namespace magpie::analysis {

enum class ScenarioKind : uint8_t { kOp, kKernel, kCpu, kLaunch, kSync, kWait };

struct Scenario {
  std::string text;  // as given
  ScenarioKind kind = ScenarioKind::kOp;
  std::string name;      // op name / kernel text / "" for all
  // op only: the call's recorded Input Dims as compact JSON ("[[4,2048],[2048,5632]]",
  // written op:NAME:SHAPES:CHANGE as replay's --op NAME:SHAPES); empty: any shapes.
  std::string shapes;
  double speedup = 1;    // new time = old / speedup (inf → 0)
  int64_t add_ns = 0;    // added per call (op) or per kernel
};

// Throws Error(kUsage) naming the scenario and showing the syntax.
Scenario parse_scenario(std::string_view text);

struct WindowChange {
  std::string label;
  int64_t before_ns = 0, after_ns = 0;
};

struct WhatIfResult {
  Scenario scenario;
  size_t matched = 0;  // nodes (or op calls) the scenario changed
  WindowChange whole;  // the whole window
  std::vector<WindowChange> iterations;
  // Sums over iterations, each from the previous one's completion to its own
  // (the first: from its start): the time from the first's start to the last's end.
  int64_t iterations_before_ns = 0, iterations_after_ns = 0;
  double median_step_before_us = 0, median_step_after_us = 0;
  std::array<int64_t, kPathCategories> after_by_category{};  // new path of the whole window
  std::vector<std::string> warnings;
  // The gain end to end: iterations when there are some, else the whole window.
  int64_t gain_ns() const;
};

WhatIfResult what_if(const trace::Trace& trace, const DependencyGraph& g,
                     const std::vector<PathWindow>& windows, const Scenario& scenario);

// Per op name (the ops with most GPU time and most host time): the end-to-end
// gain if its GPU work took no time, and if its host time took none. Upper
// bounds: no faster kernel or leaner host code can gain more.
struct OpGainBound {
  std::string name;
  int64_t kernel_ns = 0;       // its GPU time
  int64_t host_ns = 0;         // its host time (self time of it and the ops inside it)
  int64_t gpu_gain_ns = 0;     // end-to-end gain with its GPU work at zero
  int64_t host_gain_ns = 0;    // end-to-end gain with its host time at zero
};
// Taking the profiler's own cost out of the graph before any scenario. A
// traced run is slower than the real one: under the PyTorch profiler with
// CPU activities and record_shapes, host work takes about twice as long, and
// each GPU event carries a fixed cost (about 1 us on Hopper). Without this a
// what-if describes the profiled run (docs/CRITICAL_PATH.md, "Calibration").
struct CalibrationRequest {
  int64_t measured_step_ns = 0;    // the step measured without the profiler (median); 0: not given
  int64_t kernel_overhead_ns = 0;  // profiler cost per GPU event, taken off each event's time
  bool any() const { return measured_step_ns > 0 || kernel_overhead_ns > 0; }
};
struct Calibration {
  bool applied = false;
  double host_speedup = 1;  // host work (op self time, launch calls, untraced time) divided by this
  int64_t kernel_overhead_ns = 0;
  int64_t traced_step_ns = 0;      // median iteration (whole window without iterations), as traced
  int64_t calibrated_step_ns = 0;  // the same after calibration: the "before" of every scenario
  int64_t measured_step_ns = 0;
  std::vector<std::string> notes;
};
// Lowers g's costs in place (GPU events minus the overhead, then host work
// divided by the factor that makes the median step equal the measured one),
// so that every later re-timing and gain bound starts from the calibrated
// run. The recorded start and end times stay as traced.
Calibration calibrate(DependencyGraph& g, const std::vector<PathWindow>& windows, const CalibrationRequest& request);
std::vector<OpGainBound> op_gain_bounds(const trace::Trace& trace, const DependencyGraph& g,
                                        const std::vector<PathWindow>& windows, size_t top_n = 10);

}  // namespace magpie::analysis
