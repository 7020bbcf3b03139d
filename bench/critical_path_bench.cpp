// Critical path and what-if cost beyond ingest (docs/PERFORMANCE.md, "Critical
// path and what-if"): on the H200 Llama trace and, when it exists, the 221.6 MB
// bench trace (bench/make_large_trace.py → bench/data/large_trace.json.gz, or
// $MAGPIE_LARGE_TRACE; run from the repository root). The
// trace is loaded once outside the timed loop; each benchmark times one stage.
// Counters: the whole window's path length and its CPU share, so a run also
// shows what it measured.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "analysis/critical_path.hpp"
#include "analysis/critical_path_graph.hpp"
#include "analysis/critical_path_whatif.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace {

using namespace magpie::analysis;

std::string trace_path(int which) {
  if (which == 0) return std::string(MAGPIE_SHARED_TRACES) + "/h200/llama_4layer_bs16_prompt1024_decode16.json.gz";
  const char* large = std::getenv("MAGPIE_LARGE_TRACE");  // run from the repo root otherwise
  return large ? large : "bench/data/large_trace.json.gz";
}

const magpie::trace::Trace* loaded(int which) {
  static std::map<int, magpie::trace::Trace> traces;
  if (auto it = traces.find(which); it != traces.end()) return &it->second;
  if (!std::filesystem::exists(trace_path(which))) return nullptr;
  auto [it, fresh] = traces.emplace(which, magpie::trace::load_trace(trace_path(which), {}));
  magpie::trace::links_of(it->second);
  return &it->second;
}

void BM_DependencyGraph(benchmark::State& state) {
  const auto* t = loaded(static_cast<int>(state.range(0)));
  if (!t) return state.SkipWithError("trace absent (bench/make_large_trace.py makes the large one)");
  for (auto _ : state) {
    auto g = build_dependency_graph(*t, magpie::trace::links_of(*t));
    benchmark::DoNotOptimize(g.order.data());
  }
}
BENCHMARK(BM_DependencyGraph)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Graph, iterations, paths, breakdowns, one what-if and the gain bounds: what
// `magpie whatif TRACE --scenario launch:0` adds to the ingest.
void BM_CriticalPathAndWhatIf(benchmark::State& state) {
  const auto* t = loaded(static_cast<int>(state.range(0)));
  if (!t) return state.SkipWithError("trace absent (bench/make_large_trace.py makes the large one)");
  const auto& links = magpie::trace::links_of(*t);
  CriticalPathReport report;
  for (auto _ : state) {
    auto g = build_dependency_graph(*t, links);
    std::vector<std::string> warnings;
    auto windows = path_windows(*t, links, g, warnings);
    report = analyze_critical_path(*t, links, g, windows);
    auto w = what_if(*t, g, windows, parse_scenario("launch:0"));
    auto bounds = op_gain_bounds(*t, g, windows);
    benchmark::DoNotOptimize(w.whole.after_ns);
    benchmark::DoNotOptimize(bounds.data());
  }
  const auto& whole = report.paths.at(0);
  state.counters["path_ms"] = static_cast<double>(whole.length_ns()) / 1e6;
  state.counters["cpu_pct"] = 100.0 * static_cast<double>(whole.by_category[0]) / static_cast<double>(whole.length_ns());
  state.counters["windows"] = static_cast<double>(report.paths.size());
}
BENCHMARK(BM_CriticalPathAndWhatIf)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

// The stages one by one, on a graph built once.
void BM_CriticalPathStage(benchmark::State& state) {
  const auto* t = loaded(static_cast<int>(state.range(0)));
  if (!t) return state.SkipWithError("trace absent (bench/make_large_trace.py makes the large one)");
  const auto& links = magpie::trace::links_of(*t);
  const auto g = build_dependency_graph(*t, links);
  std::vector<std::string> warnings;
  const auto windows = path_windows(*t, links, g, warnings);
  for (auto _ : state) {
    switch (state.range(1)) {
      case 0: benchmark::DoNotOptimize(path_windows(*t, links, g, warnings).size()); break;
      case 1: benchmark::DoNotOptimize(analyze_critical_path(*t, links, g, windows).paths.size()); break;
      case 2: benchmark::DoNotOptimize(what_if(*t, g, windows, parse_scenario("launch:0")).matched); break;
      case 3: benchmark::DoNotOptimize(op_gain_bounds(*t, g, windows).size()); break;
    }
  }
  static const char* kStage[] = {"windows", "paths", "whatif", "bounds"};
  state.SetLabel(kStage[state.range(1)]);
}
BENCHMARK(BM_CriticalPathStage)
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace
