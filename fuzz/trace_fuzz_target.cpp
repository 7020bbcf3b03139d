#include "trace_fuzz_target.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "analysis/collective_report.hpp"
#include "analysis/critical_path.hpp"
#include "analysis/critical_path_graph.hpp"
#include "analysis/critical_path_ranks.hpp"
#include "analysis/critical_path_whatif.hpp"
#include "analysis/gap_analysis.hpp"
#include "analysis/gpu_arch.hpp"
#include "analysis/graph_capture_alignment.hpp"
#include "analysis/roofline_table.hpp"
#include "analysis/stage_splitter.hpp"
#include "analysis/trace_diff.hpp"
#include "analysis/tracelens_tables.hpp"
#include "core/arriving_text.hpp"
#include "core/error.hpp"
#include "core/gzip.hpp"
#include "report/table.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/rocprof_reader.hpp"
#include "trace/trace_links.hpp"

namespace magpie::fuzz {

namespace {

using analysis::Stage;

// Tiny chunks for small inputs, so the splitter's boundaries move with every
// input; a whole real trace (replayed from a file) keeps the default size,
// since one chunk output per few hundred bytes of 50 MB would need ~100 GB.
size_t chunk_bytes_for(size_t size) {
  return size <= 65536 ? 64 + (size % 512) : trace::IngestOptions{}.chunk_bytes;
}

// The arch the commands would pick from deviceProperties; else H100 so that
// the roofline code runs on traces that name no GPU.
std::optional<analysis::GpuArch> arch_for(const trace::Trace& t) {
  const auto& table = analysis::builtin_gpu_archs();
  if (!t.devices.empty()) {
    const auto& d = t.devices.front();
    auto pick = analysis::pick_gpu_arch(d.name, d.compute_major, d.compute_minor, d.num_sms,
                                        d.total_global_mem, table);
    if (pick.arch) return pick.arch;
  }
  return analysis::find_gpu_arch("H100", table);
}

void render(const analysis::StageAnalysis& a) {
  const analysis::StageTables tables = analysis::make_stage_tables(a);
  for (const report::Table* table : tables.all()) (void)report::to_csv(*table);
  (void)report::to_csv(tables.simple_summary);
}

// What `magpie whatif` does: the dependency graph, the iterations, their
// critical paths, every kind of scenario, a calibration and the gain bounds.
void critical_path(const trace::Trace& t, const trace::TraceLinks& links) {
  analysis::DependencyGraph g = analysis::build_dependency_graph(t, links);
  // The trace as two ranks of one job: every collective pairs with itself.
  analysis::DependencyGraph peer = analysis::build_dependency_graph(t, links);
  std::vector<const trace::Trace*> ranks{&t, &t};
  std::vector<analysis::DependencyGraph*> graphs{&g, &peer};
  (void)analysis::link_ranks(ranks, graphs);
  std::vector<std::string> warnings;
  const auto windows = analysis::path_windows(t, links, g, warnings);
  (void)analysis::analyze_critical_path(t, links, g, windows);
  const std::string op = t.events.size() ? std::string(t.name(0)) : "aten::mm";
  for (const std::string& s : {"op:" + op + ":2x", "op:" + op + ":+30us", std::string("kernel:gemm:inf"),
                               std::string("cpu:2x"), "cpu:" + op + ":0.5x", std::string("launch:0"),
                               std::string("sync:0"), std::string("wait:0")}) {
    analysis::Scenario scenario;
    try {
      scenario = analysis::parse_scenario(s);
    } catch (const Error&) {
      continue;  // a name the syntax cannot hold (empty): the CLI says so too
    }
    (void)analysis::what_if(t, g, windows, scenario);
  }
  (void)analysis::op_gain_bounds(t, g, windows, 3);
  (void)analysis::calibrate(g, windows, {.measured_step_ns = 1000 + static_cast<int64_t>(t.events.size() % 5000) * 100,
                                         .kernel_overhead_ns = 1000});
  (void)analysis::what_if(t, g, windows, analysis::parse_scenario("launch:0"));
}

// What gap analysis, both tracelens modes and the collective report do with
// one loaded trace, in memory (no files written).
// `reread` gives a second copy of the trace (tables are not copyable), the
// capture trace when it recorded its own graph capture.
void analyse(trace::Trace& t, const std::function<trace::Trace()>& reread) {
  const trace::TraceLinks links = trace::link_trace(t);

  analysis::GapAnalysisResult gap;
  gap.ranks.push_back(analysis::analyze_rank(t, analysis::GapAnalysisConfig{}));
  analysis::GapAnalysisConfig window;  // a window and a duration floor, as the flags set them
  window.start_pct = 10;
  window.end_pct = 90;
  window.min_duration_us = 1;
  gap.ranks.push_back(analysis::analyze_rank(t, window));
  gap.ranks.back().rank = 1;
  analysis::merge_ranks(gap);
  for (const auto& row : analysis::make_rows(gap.merged, gap.total_duration_us, 20))
    (void)analysis::format_input_dims(row.input_shapes);

  const std::optional<analysis::GpuArch> arch = arch_for(t);
  const analysis::GpuArch* arch_ptr = arch ? &*arch : nullptr;

  // Graph replay: the trace as its own capture trace, as tracelens does when
  // one profiler run recorded both.
  std::vector<analysis::CaptureTrace> captures;
  std::optional<analysis::GraphAlignment> alignment;
  if (links.summary.graph_kernels > 0) {
    if (analysis::has_capture_window(t)) {
      analysis::CaptureTrace c;
      c.trace = reread();
      c.links = trace::link_trace(c.trace);
      captures.push_back(std::move(c));
    }
    alignment = analysis::align_graph_capture(t, links, captures);
  }
  analysis::AttributionSources sources{&t, &links, &captures, alignment ? &*alignment : nullptr};

  // Inference mode: stages, then each pick's tables.
  const analysis::StageSplit split = analysis::split_stages(t, links, (t.events.size() & 1) ? 2 : 0);
  for (const auto& pick : split.picks) {
    const analysis::Iteration& it = split.iterations.at(pick.iteration);
    render(analysis::analyze_stage({sources, it.gpu_rows, &it.step, arch_ptr}));
  }

  // Pytorch mode: every GPU event of the trace, in time order, without captures.
  std::vector<uint32_t> rows;
  for (uint32_t row = 0; row < t.events.size(); ++row)
    if (trace::is_gpu_activity(t.events.category[row])) rows.push_back(row);
  std::sort(rows.begin(), rows.end(),
            [&](uint32_t a, uint32_t b) { return t.events.ts_ns[a] < t.events.ts_ns[b]; });
  analysis::AttributionSources plain{&t, &links, nullptr, nullptr};
  render(analysis::analyze_stage({plain, rows, nullptr, arch_ptr}));

  // The collective report, with the trace as two ranks.
  analysis::CollectiveCollection collection;
  analysis::collect_collectives(t, links, std::max(t.rank, 0), collection);
  analysis::collect_collectives(t, links, std::max(t.rank, 0) + 1, collection);
  const analysis::CollectiveReport report = analysis::make_collective_report(std::move(collection));
  for (const auto& table : analysis::collective_tables(report)) (void)report::to_csv(table);
  critical_path(t, links);
  // The structural diff of the trace with itself (every op and kernel matched).
  (void)analysis::diff_traces(t, t);
}

void parse_and_analyse(const PaddedBuffer& buf, std::string_view bytes) {
  trace::IngestOptions options;
  options.threads = 1;
  options.chunk_bytes = chunk_bytes_for(buf.size());  // the inflated size
  options.include_python_functions = (bytes.size() & 1) != 0;
  auto reread_kineto = [&] { return trace::parse_kineto(buf, "fuzz.json", options); };
  std::optional<trace::Trace> t;
  try {
    t = reread_kineto();
  } catch (const Error&) {
  }
  if (t) analyse(*t, reread_kineto);
  const std::string_view head = buf.view().substr(0, 4096);
  try {
    if (trace::looks_like_rocprof_json(head)) {
      auto reread = [&] { return trace::parse_rocprof_json(buf, "fuzz.json"); };
      trace::Trace r = reread();
      analyse(r, reread);
    }
  } catch (const Error&) {
  }
  try {
    if (trace::looks_like_rocprof_csv(head)) {
      auto reread = [&] { return trace::parse_rocprof_csv(buf.view(), "fuzz.csv"); };
      trace::Trace r = reread();
      analyse(r, reread);
    }
  } catch (const Error&) {
  }
}

}  // namespace

void run_trace_input(std::string_view bytes) {
  const size_t size = bytes.size();
  if (is_gzip(bytes)) {
    try {  // the path that parses while inflating
      PaddedBuffer copy(size);
      std::memcpy(copy.data(), bytes.data(), size);
      auto gz = ArrivingText::inflate(std::move(copy), "fuzz.json.gz");
      trace::IngestOptions options;
      // Half the inputs (by size) through a worker and the merge thread, half
      // through the planner alone: the same bytes, so a difference is a bug.
      options.threads = 1 + static_cast<unsigned>(size % 2);
      // Inflated size unknown yet: tiny chunks only where it cannot be large.
      options.chunk_bytes = chunk_bytes_for(size <= 64 ? size : 65537);
      (void)trace::parse_kineto(*gz, "fuzz.json.gz", options);
    } catch (const Error&) {
    }
    PaddedBuffer plain;
    try {
      plain = gunzip(bytes, "fuzz.json.gz");
    } catch (const Error&) {
      return;
    }
    parse_and_analyse(plain, bytes);
    return;
  }
  PaddedBuffer buf(size);
  if (size) std::memcpy(buf.data(), bytes.data(), size);
  parse_and_analyse(buf, bytes);
}

}  // namespace magpie::fuzz
