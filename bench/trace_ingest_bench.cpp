// Trace ingest micro-benchmarks on a real trace (the H200 Llama trace, 9 MB of
// JSON), with a reference measured in the same run: simdjson's DOM parser over
// the whole document aggregating kernel time by name — the straightforward way
// to do it in C++. bench/run_trace_bench.sh covers the 220 MB end-to-end case.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <string>
#include <unordered_map>

#include "core/file_io.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace_links.hpp"

namespace {

const magpie::PaddedBuffer& trace_json() {
  static magpie::PaddedBuffer buf = magpie::read_maybe_gzip(
      std::string(MAGPIE_SHARED_TRACES) + "/h200/llama_4layer_bs16_prompt1024_decode16.json.gz");
  return buf;
}

void BM_Gunzip(benchmark::State& state) {
  auto gz = magpie::read_file(std::string(MAGPIE_SHARED_TRACES) +
                              "/h200/llama_4layer_bs16_prompt1024_decode16.json.gz");
  size_t out = 0;
  for (auto _ : state) {
    auto text = magpie::read_maybe_gzip(std::string(MAGPIE_SHARED_TRACES) +
                                        "/h200/llama_4layer_bs16_prompt1024_decode16.json.gz");
    out = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out));
}
BENCHMARK(BM_Gunzip)->Unit(benchmark::kMillisecond);

void BM_ParseKineto(benchmark::State& state) {
  const auto& json = trace_json();
  magpie::trace::IngestOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    auto t = magpie::trace::parse_kineto(json, "bench.json", options);
    benchmark::DoNotOptimize(t.events.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_ParseKineto)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ParseAndLink(benchmark::State& state) {
  const auto& json = trace_json();
  for (auto _ : state) {
    auto t = magpie::trace::parse_kineto(json, "bench.json", {});
    auto links = magpie::trace::link_trace(t);
    benchmark::DoNotOptimize(links.summary.gpu_events);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_ParseAndLink)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reference: whole-document DOM parse, then aggregate kernel durations.
void BM_ReferenceSimdjsonDom(benchmark::State& state) {
  const auto& json = trace_json();
  simdjson::dom::parser parser;
  for (auto _ : state) {
    std::unordered_map<std::string, double> totals;
    simdjson::dom::element doc = parser.parse(json.data(), json.size(), false);
    for (simdjson::dom::element ev : doc["traceEvents"].get_array()) {
      std::string_view cat;
      if (ev["cat"].get_string().get(cat) || cat != "kernel") continue;
      std::string_view name;
      double dur = 0;
      if (ev["name"].get_string().get(name) || ev["dur"].get_double().get(dur)) continue;
      totals[std::string(name)] += dur;
    }
    benchmark::DoNotOptimize(totals.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_ReferenceSimdjsonDom)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
