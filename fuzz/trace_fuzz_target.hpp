#pragma once
// What the trace fuzzer runs on one input, outside libFuzzer too: the unit
// test FuzzRegressions replays every saved reproducer (fuzz/regressions/)
// through it with the normal build, so a crash found once stays fixed.
#include <cstdint>
#include <string_view>

namespace magpie::fuzz {

// Feeds `bytes` to every trace reader (gzip, Kineto JSON with tiny chunks,
// rocprofv3 JSON and CSV) and, when one yields a trace, to the analyses the
// commands run on it: gap analysis, the inference stage split and per-stage
// roofline tables, pytorch mode's whole-trace tables, graph-capture alignment
// and the collective report. Only magpie::Error may escape a reader; anything
// else (another exception, a crash, a sanitizer report) is a bug.
void run_trace_input(std::string_view bytes);

}  // namespace magpie::fuzz
