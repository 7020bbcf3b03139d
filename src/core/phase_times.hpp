#pragma once
// Phase marks for performance work: with MAGPIE_PHASE_TIMES set, each mark
// prints "[phase <seconds since start>] <what>" on stderr (docs/PERFORMANCE.md
// reads ingest phases this way). Without it a mark costs one branch.
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace magpie_phase {
inline double now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
// The process's start, as far as marks go: main() calls it first.
inline double& t0() {
  static double t = now();
  return t;
}
inline void mark(const char* what) {
  static const bool on = std::getenv("MAGPIE_PHASE_TIMES") != nullptr;
  if (on) std::fprintf(stderr, "[phase %.3f] %s\n", now() - t0(), what);
}
}  // namespace magpie_phase
