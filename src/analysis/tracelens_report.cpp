#include "analysis/tracelens_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "analysis/collective_report.hpp"
#include "analysis/gpu_arch.hpp"
#include "analysis/graph_capture_alignment.hpp"
#include "analysis/roofline_table.hpp"
#include "analysis/stage_splitter.hpp"
#include "analysis/tracelens_tables.hpp"
#include "core/cancel.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "report/xlsx_writer.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {

namespace fs = std::filesystem;
using json = nlohmann::json;
using trace::Category;

std::string summary_file_value(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "unknown";
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool is_trace_file(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.ends_with(".json") || n.ends_with(".json.gz");
}

std::vector<fs::path> input_files(const fs::path& trace) {
  return fs::is_directory(trace) ? trace::discover_trace_files(trace) : std::vector{trace};
}

bool has_device_work(const trace::Trace& t) {
  for (size_t r = 0; r < t.events.size(); ++r) {
    if (trace::is_gpu_activity(t.events.category[r])) return true;
  }
  return false;
}

// The same words as gap analysis (exit 6) for a trace without device work.
Error no_device_work(const std::string& where) {
  return Error(ErrorKind::kNoGpuEvents,
               "no GPU kernel events (device kernels, copies or sets) in the trace", where,
               std::nullopt,
               "record the trace with ProfilerActivity.CUDA; a category named 'gpu' in another "
               "tool's trace (a browser's GPU process) is not device work");
}

void add_skipped(TraceLensResult& r, const fs::path& file, const Error& e) {
  r.skipped.push_back({file.string(), to_string(e.kind()), e.what()});
  r.warnings.push_back("skipped " + std::string(e.what()));
}

void add_rank(TraceLensResult& r, const trace::Trace& t) {
  r.ranks.push_back({t.rank, trace::to_string(t.rank_source), t.cycle, t.cycles, t.path});
}

std::vector<fs::path> capture_files(const fs::path& dir) {
  if (!fs::is_directory(dir)) {
    throw Error(ErrorKind::kNotFound, "--capture-dir is not a directory", dir.string());
  }
  std::vector<fs::path> all, named;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file() || !is_trace_file(e.path())) continue;
    all.push_back(e.path());
    if (e.path().filename().string().find("capture") != std::string::npos)
      named.push_back(e.path());
  }
  auto& out = named.empty() ? all : named;
  std::sort(out.begin(), out.end());
  return out;
}

struct ArchChoice {
  std::optional<GpuArch> arch;
  std::string reason;
};

ArchChoice choose_arch(const TraceLensOptions& o, const trace::Trace& t) {
  std::vector<GpuArch> table = builtin_gpu_archs();
  if (!o.gpu_arch_file.empty()) table = load_gpu_arch_file(o.gpu_arch_file, std::move(table));
  if (!o.gpu_arch.empty()) {
    auto a = find_gpu_arch(o.gpu_arch, table);
    if (!a) {
      std::string known;
      for (const auto& g : table) known += (known.empty() ? "" : ", ") + g.name;
      throw Error(ErrorKind::kUsage, fmt::format("unknown --gpu-arch '{}'", o.gpu_arch), "",
                  std::nullopt, "known: " + known + "; add others with --gpu-arch-file");
    }
    return {a, "--gpu-arch " + o.gpu_arch};
  }
  // The device the GPU work ran on.
  std::map<int32_t, size_t> used;
  for (size_t r = 0; r < t.events.size(); ++r) {
    if (trace::is_gpu_activity(t.events.category[r])) ++used[t.events.device[r]];
  }
  const trace::DeviceInfo* dev = t.devices.empty() ? nullptr : &t.devices.front();
  int32_t busiest = -1;
  size_t most = 0;
  for (auto [d, n] : used) {
    if (n > most) busiest = d, most = n;
  }
  for (const auto& d : t.devices) {
    if (d.id == busiest) dev = &d;
  }
  if (!dev) return {std::nullopt, "the trace has no deviceProperties"};
  ArchPick p = pick_gpu_arch(dev->name, dev->compute_major, dev->compute_minor, dev->num_sms,
                             dev->total_global_mem, table);
  return {p.arch, p.reason};
}

// What the stage reports could not do, and how to get it.
void input_warnings(const trace::Trace& t, std::vector<std::string>& warnings) {
  size_t ops = 0, with_shapes = 0;
  std::set<std::string> other_annotations;
  for (size_t r = 0; r < t.events.size(); ++r) {
    const Category c = t.events.category[r];
    if (c == Category::kCpuOp) {
      ++ops;
      with_shapes += t.events.detail[r] != trace::kNoDetail &&
                     t.events.op_details[t.events.detail[r]].input_dims != trace::kEmptyString;
    }
  }
  if (ops > 0 && with_shapes == 0) {
    warnings.push_back(fmt::format(
        "{}: no cpu_op records its input shapes: FLOPs and bytes (has_perf_model) need a trace "
        "recorded with torch.profiler.profile(record_shapes=True) (vLLM/SGLang: enable "
        "record_shapes in the profiler config)",
        t.path));
  }
}

// Rows whose rates exceed the device's peak are flagged in their tables'
// "Peak Check" column; the manifest says so too, with the first such row.
void peak_warning(const std::string& where, const StageAnalysis& a,
                  std::vector<std::string>& warnings) {
  if (a.groups_above_peak == 0) return;
  const auto g = std::find_if(a.groups.begin(), a.groups.end(),
                              [](const OpGroup& x) { return x.calls_above_peak > 0; });
  warnings.push_back(fmt::format(
      "{}: {} op group(s) run faster than the device's peak allows, flagged in the Peak Check "
      "column (peak_check in the compact CSV); the first: {} {}: {}",
      where, a.groups_above_peak, g->name, g->input_dims, g->above_peak));
}

TraceLensPhasePick make_pick(const Iteration& it, const StagePick& p, const std::string& trace_path) {
  TraceLensPhasePick pick;
  pick.stage = p.stage;
  pick.batch_size = it.step.batch_size;
  pick.trace_path = trace_path;
  pick.num_gpu_events = it.gpu_rows.size();
  pick.gpu_duration_us = it.gpu_duration_us;
  pick.gpu_busy_us = it.gpu_busy_us;
  pick.selection_reason = p.selection_reason;
  pick.candidates = p.candidates;
  pick.marker = it.marker;
  pick.stage_source = it.stage_source;
  pick.start_ns = it.start_ns;
  pick.end_ns = it.end_ns;
  return pick;
}

json pick_json(const TraceLensPhasePick& p, const std::string& key, const std::string& label) {
  return {{"stage", key},
          {"output_label", label},
          {"batch_size", p.batch_size},
          {"trace_path", p.trace_path},
          {"num_gpu_events", p.num_gpu_events},
          {"gpu_duration", p.gpu_duration_us},
          {"gpu_busy_duration", p.gpu_busy_us},
          {"selection_reason", p.selection_reason},
          {"candidates", p.candidates},
          {"marker", p.marker},
          {"stage_source", p.stage_source},
          {"window_ns", {p.start_ns, p.end_ns}}};
}

// Writes one report's tables into `dir`; returns the files written.
std::vector<std::string> write_tables(const StageTables& tables, const fs::path& dir,
                                      const TraceLensOptions& o, std::vector<std::string>& errors) {
  std::vector<std::string> files;
  if (!o.perf_report) return files;
  fs::create_directories(dir);
  if (o.write_csv) {
    for (const report::Table* t : tables.all()) {
      const fs::path p = dir / (t->name + ".csv");
      write_file_atomic(p, report::to_csv(*t));
      files.push_back(p.string());
    }
  }
  if (o.write_excel) {
    const fs::path p = dir / "perf_report.xlsx";
    try {
      report::write_xlsx(p, tables.all());
      files.push_back(p.string());
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  }
  return files;
}

struct Loaded {
  trace::Trace trace;
  trace::TraceLinks links;
};

// Writes tracelens/collective_report/ (CSV per sheet, and/or one workbook).
void write_collective_report(CollectiveCollection collection, const fs::path& out_root,
                             const TraceLensOptions& o, TraceLensResult& r) {
  TraceLensCollectiveSummary s;
  s.ranks = collection.ranks.size();
  s.collective_kernels = collection.calls.size();
  const CollectiveReport rep = make_collective_report(std::move(collection));
  for (const auto& w : rep.warnings) r.warnings.push_back("collective report: " + w);
  s.rows = rep.summary.size();
  if (s.collective_kernels == 0) {
    r.warnings.push_back(
        "collective report: no NCCL/RCCL collective kernels in the trace(s); nothing written");
    r.collective_report = std::move(s);
    return;
  }
  const std::vector<report::Table> tables = collective_tables(rep);
  const fs::path dir = out_root / "collective_report";
  fs::create_directories(dir);
  if (o.write_csv) {
    for (const auto& t : tables) {
      const fs::path p = dir / (t.name + ".csv");
      write_file_atomic(p, report::to_csv(t));
      s.files.push_back(p.string());
    }
  }
  if (o.write_excel) {
    const fs::path p = dir / "collective_report.xlsx";
    std::vector<const report::Table*> sheets;
    for (const auto& t : tables) sheets.push_back(&t);
    try {
      report::write_xlsx(p, sheets);
      s.files.push_back(p.string());
    } catch (const Error& e) {
      r.errors.push_back(e.what());
    }
  }
  r.output_files.insert(r.output_files.end(), s.files.begin(), s.files.end());
  r.collective_report = std::move(s);
}

void progress_loaded(const TraceLensOptions& o, const fs::path& path, const trace::Trace& t,
                     std::chrono::steady_clock::time_point t0) {
  if (!o.progress) return;
  o.progress(fmt::format("loaded {} ({:.1f} MB JSON, {} events) in {:.2f} s",
                         path.filename().string(), static_cast<double>(t.stats.raw_bytes) / 1e6,
                         t.stats.events_kept, seconds_since(t0)));
}

Loaded load(const fs::path& path, const TraceLensOptions& o) {
  throw_if_cancelled(o.ingest.cancel, "tracelens");
  auto t0 = std::chrono::steady_clock::now();
  Loaded l{trace::load_trace(path, o.ingest), {}};
  l.links = trace::links_of(l.trace);  // built by the ingest; Loaded keeps its own copy
  progress_loaded(o, path, l.trace, t0);
  return l;
}

// Every trace of the input, merged files split into their ranks, ranked by
// the one rule (trace/rank_discovery.hpp). Unreadable files are skipped with a
// warning (the same rule as gap analysis); none readable throws the first error.
std::vector<trace::Trace> load_ranked(const std::vector<fs::path>& files, const TraceLensOptions& o,
                                      TraceLensResult& r) {
  std::vector<trace::Trace> traces;
  std::optional<Error> first_error;
  for (const auto& f : files) {
    throw_if_cancelled(o.ingest.cancel, "tracelens");
    auto t0 = std::chrono::steady_clock::now();
    try {
      for (auto& t : trace::load_trace_ranks(f, o.ingest)) traces.push_back(std::move(t));
      progress_loaded(o, f, traces.back(), t0);
    } catch (const Error& e) {
      if (files.size() == 1 || e.kind() == ErrorKind::kCancelled) throw;
      add_skipped(r, f, e);
      if (!first_error) first_error = e;
    }
  }
  if (traces.empty()) throw *first_error;
  std::vector<trace::TraceOrigin> origins;
  std::vector<trace::Trace*> pointers;
  for (auto& t : traces) {
    origins.push_back(trace::origin_of(t));
    pointers.push_back(&t);
  }
  const trace::RankPlan plan = trace::plan_ranks(origins);
  trace::apply_rank_plan(plan, pointers);
  r.warnings.insert(r.warnings.end(), plan.warnings.begin(), plan.warnings.end());
  return traces;
}

// The trace inference mode analyses: rank 0 of a folder (its last profiling
// cycle), chosen from the files' heads (distributedInfo), names, else order,
// without loading every rank; a merged file is split and its rank 0 taken.
Loaded load_rank0(const TraceLensOptions& o, TraceLensResult& r) {
  const std::vector<fs::path> files = input_files(o.trace);
  fs::path chosen = files.front();
  if (files.size() > 1) {
    std::vector<trace::TraceOrigin> origins;
    std::vector<fs::path> readable;
    std::optional<Error> first_error;
    for (const auto& f : files) {
      try {
        origins.push_back(trace::peek_origin(f));
        readable.push_back(f);
      } catch (const Error& e) {
        add_skipped(r, f, e);
        if (!first_error) first_error = e;
      }
    }
    if (readable.empty()) throw *first_error;
    const trace::RankPlan plan = trace::plan_ranks(origins);
    r.warnings.insert(r.warnings.end(), plan.warnings.begin(), plan.warnings.end());
    int rank = 0;
    if (!plan.representative(0)) {
      rank = plan.ranks.front();
      r.warnings.push_back(fmt::format("no trace in {} is rank 0: inference mode analyses rank {}",
                                       o.trace.string(), rank));
    }
    const size_t pick = *plan.representative(rank);
    chosen = readable[pick];
    const auto& a = plan.assignments[pick];
    if (a.cycles > 1) {
      r.warnings.push_back(fmt::format(
          "rank {} has {} profiling cycles: inference mode analyses the last one, {}", rank,
          a.cycles, chosen.string()));
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<trace::Trace> parts = trace::load_trace_ranks(chosen, o.ingest);
  size_t index = 0;
  if (parts.size() > 1) {
    // A merged file: its rank 0, else its lowest rank.
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].rank == 0) index = i;
    }
    r.warnings.push_back(fmt::format("{} holds {} ranks: inference mode analyses rank {}",
                                     chosen.string(), parts.size(), parts[index].rank));
  }
  Loaded l{std::move(parts[index]), {}};
  if (l.trace.rank < 0) l.trace.rank = 0;
  l.links = trace::links_of(l.trace);  // built by the ingest; Loaded keeps its own copy
  progress_loaded(o, chosen, l.trace, t0);
  return l;
}

TraceLensResult run_inference(const TraceLensOptions& o, const fs::path& out_root) {
  const auto t_start = std::chrono::steady_clock::now();
  TraceLensResult r;
  r.mode = "inference";
  r.stages = o.stages;
  if (r.stages.empty()) r.stages = {Stage::kPrefillDecode, Stage::kDecode, Stage::kPrefill};

  r.trace_dir = (fs::is_directory(o.trace) ? o.trace : o.trace.parent_path()).string();
  Loaded main = load_rank0(o, r);
  const fs::path trace_path = main.trace.path;
  r.rank0_trace = trace_path.string();
  add_rank(r, main.trace);
  if (!has_device_work(main.trace)) throw no_device_work(trace_path.string());
  for (const auto& w : main.trace.warnings) r.warnings.push_back(w);
  input_warnings(main.trace, r.warnings);
  r.load_s = seconds_since(t_start);

  ArchChoice arch = choose_arch(o, main.trace);
  if (arch.arch) r.gpu_arch_platform = arch.arch->name;
  r.gpu_arch_reason = arch.reason;
  if (!arch.arch) {
    r.warnings.push_back(
        "unknown GPU (" + arch.reason +
        "): roofline columns are left empty; pass --gpu-arch NAME or --gpu-arch-file FILE");
  }

  // Graph-capture traces, when given.
  std::vector<CaptureTrace> captures;
  std::optional<GraphAlignment> alignment;
  // A trace that recorded the capture too (torch.cuda.graph under one profiler
  // run) is its own capture trace.
  const bool self_capture = o.capture_dir.empty() && main.links.summary.graph_kernels > 0 &&
                            has_capture_window(main.trace);
  if (!o.capture_dir.empty() || self_capture) {
    TraceLensGraphAttribution ga;
    ga.capture_dir = o.capture_dir;
    // Tables are not copyable: the self-capture is read a second time.
    for (const auto& f : self_capture ? std::vector<fs::path>{trace_path} : capture_files(o.capture_dir)) {
      try {
        Loaded c = load(f, o);
        captures.push_back({std::move(c.trace), std::move(c.links)});
        ga.capture_traces.push_back(f.string());
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kCancelled) throw;
        r.warnings.push_back(fmt::format("capture trace skipped: {}", e.what()));
      }
    }
    if (captures.empty()) {
      r.warnings.push_back("--capture-dir " + o.capture_dir.string() +
                           " holds no readable capture trace: graph-replayed kernels stay "
                           "unattributed");
    }
    alignment = align_graph_capture(main.trace, main.links, captures);
    for (const auto& w : alignment->warnings) r.warnings.push_back(w);
    const auto& g = *alignment;
    ga.captured_launches = g.launches.size();
    ga.graph_launches = g.graph_launches;
    ga.graph_kernels = g.graph_kernels;
    ga.attributed_kernels = g.attributed;
    ga.attributed_to_op = g.attributed_to_op;
    ga.captured_graphs = g.captured_graphs.size();
    ga.graphs = g.graphs;
    ga.coverage_pct = g.graph_kernels ? 100.0 * static_cast<double>(g.attributed) /
                                            static_cast<double>(g.graph_kernels)
                                      : 0.0;
    r.graph_attribution = std::move(ga);
  } else if (main.links.summary.graph_kernels > 0) {
    r.warnings.push_back(fmt::format(
        "{} kernels were replayed from {} CUDA/HIP graph launch(es) and show as one graph_replay "
        "row each; pass --capture-dir with the graph-capture traces of the same run to attribute "
        "them to ops",
        main.links.summary.graph_kernels, main.links.summary.graph_launches));
  }

  throw_if_cancelled(o.ingest.cancel, "tracelens");
  const auto t_split = std::chrono::steady_clock::now();
  StageSplit split = split_stages(main.trace, main.links, o.num_steps);
  for (const auto& w : split.warnings) r.warnings.push_back(w);
  r.split_method = split.method;
  for (const auto& it : split.iterations) ++r.iterations[std::string(to_string(it.stage))];

  AttributionSources sources{&main.trace, &main.links, &captures,
                             alignment ? &*alignment : nullptr};
  // One stage's tables from one iteration, written under out_root/label.
  auto report_stage = [&](Stage stage, const std::string& key, const std::string& label,
                          const Iteration& it, const StagePick& pick) {
    throw_if_cancelled(o.ingest.cancel, "tracelens");
    TraceLensStageResult sr;
    sr.stage = stage;
    sr.key = key;
    sr.label = label;
    sr.trace_path = trace_path.string();
    sr.pick = make_pick(it, pick, trace_path.string());

    StageInputs in{sources, it.gpu_rows, &it.step, arch.arch ? &*arch.arch : nullptr};
    const StageAnalysis a = analyze_stage(in);
    peak_warning(key, a, r.warnings);
    const StageTables tables = make_stage_tables(a);
    sr.output_dir = out_root / label;
    std::vector<std::string> errors;
    sr.files = write_tables(tables, sr.output_dir, o, errors);
    const fs::path simple =
        out_root / fmt::format("{}_ISL{}_OSL{}_CONC{}_kernel_roofline_simple.csv", label,
                               summary_file_value(o.isl), summary_file_value(o.osl),
                               summary_file_value(o.conc));
    write_file_atomic(simple, report::to_csv(tables.simple_summary));
    sr.files.push_back(simple.string());
    sr.simple_summary_file = simple.string();
    if (!errors.empty()) sr.error = errors.front();
    sr.gpu_events = a.gpu_events;
    sr.kernel_time_us = a.total_gpu_us;
    sr.ops = a.groups.size();
    sr.unattributed_events = a.unattributed_events;
    sr.graph_events = a.graph_events;
    sr.graph_events_attributed = a.graph_events_attributed;
    if (a.graph_events > 0 && a.graph_events_attributed < a.graph_events) {
      r.warnings.push_back(fmt::format("{}: {} of {} graph-replayed kernels have no op", key,
                                       a.graph_events - a.graph_events_attributed,
                                       a.graph_events));
    }
    r.errors.insert(r.errors.end(), errors.begin(), errors.end());
    r.output_files.insert(r.output_files.end(), sr.files.begin(), sr.files.end());
    r.stage_results.push_back(std::move(sr));
  };
  if (split.picks.empty()) {
    // No iteration has a stage (no step annotations, no [batch, seq] token
    // ids): the whole trace is reported as one stage rather than nothing.
    const Iteration whole = whole_trace_iteration(main.trace);
    StagePick pick;
    pick.stage = Stage::kUnknown;
    pick.candidates = 1;
    pick.selection_reason = fmt::format(
        "no iteration has a stage ({} found by {}): every GPU event of the trace, as one stage",
        split.iterations.size(), split.method);
    r.warnings.push_back(
        "no prefill/decode stage could be told in the trace (no engine step annotations, no "
        "[batch, seq] token ids): the whole trace is reported as one stage, whole_trace/ "
        "(profile with the engine's step annotations for per-stage reports)");
    r.iterations["whole_trace"] = 1;
    report_stage(Stage::kUnknown, "whole_trace", "whole_trace", whole, pick);
  } else {
    for (Stage stage : r.stages) {
      const std::string key(to_string(stage));
      auto pick = std::find_if(split.picks.begin(), split.picks.end(),
                               [&](const StagePick& p) { return p.stage == stage; });
      if (pick == split.picks.end()) {
        r.warnings.push_back(key + ": no candidate iteration found; skipping perf report");
        continue;
      }
      report_stage(stage, key, std::string(output_label(stage)), split.iterations[pick->iteration],
                   *pick);
    }
  }
  if (o.collective_report.value_or(false)) {
    // Every rank of the folder, each rank's last cycle (the rank-0 trace is read again).
    CollectiveCollection collection;
    for (const auto& t : load_ranked(input_files(o.trace), o, r)) {
      if (t.cycle + 1 != t.cycles) continue;
      collect_collectives(t, trace::links_of(t), t.rank, collection);
    }
    write_collective_report(std::move(collection), out_root, o, r);
  }
  r.analyse_s = seconds_since(t_split);
  r.total_s = seconds_since(t_start);
  return r;
}

TraceLensResult run_pytorch(const TraceLensOptions& o, const fs::path& out_root) {
  const auto t_start = std::chrono::steady_clock::now();
  TraceLensResult r;
  r.mode = "pytorch";
  r.trace_dir = (fs::is_directory(o.trace) ? o.trace : o.trace.parent_path()).string();
  r.export_format = o.write_excel ? (o.write_csv ? "both" : "excel") : "csv";
  // Ranked first (a duplicate rank fails before anything is written).
  std::vector<trace::Trace> traces = load_ranked(input_files(o.trace), o, r);
  std::set<int> ranks;
  const bool collectives = o.collective_report.value_or(true);
  CollectiveCollection collection;
  for (auto& t : traces) {
    if (!has_device_work(t)) {
      r.warnings.push_back(fmt::format("{} ({}): no GPU kernel events; no report for it", t.path,
                                       trace::rank_label(t.rank, t.cycle, t.cycles)));
      continue;
    }
    throw_if_cancelled(o.ingest.cancel, "tracelens");
    ranks.insert(t.rank);
    add_rank(r, t);
    const trace::TraceLinks& links = trace::links_of(t);
    // Cross-rank matching needs one cycle per rank: each rank's last.
    if (collectives && t.cycle + 1 == t.cycles) collect_collectives(t, links, t.rank, collection);
    if (o.perf_report) {
      input_warnings(t, r.warnings);
      ArchChoice arch = choose_arch(o, t);
      if (!arch.arch) r.warnings.push_back("unknown GPU (" + arch.reason + "): no roofline columns");
      std::vector<uint32_t> rows;
      for (uint32_t row = 0; row < t.events.size(); ++row) {
        if (trace::is_gpu_activity(t.events.category[row])) rows.push_back(row);
      }
      std::sort(rows.begin(), rows.end(),
                [&](uint32_t a, uint32_t b) { return t.events.ts_ns[a] < t.events.ts_ns[b]; });
      AttributionSources sources{&t, &links, nullptr, nullptr};
      const StageAnalysis a = analyze_stage({sources, rows, nullptr, arch.arch ? &*arch.arch : nullptr});
      peak_warning(trace::rank_label(t.rank, t.cycle, t.cycles), a, r.warnings);
      const StageTables tables = make_stage_tables(a);
      const fs::path dir = out_root / trace::rank_file_label(t.rank, t.cycle, t.cycles);
      for (auto& f : write_tables(tables, dir, o, r.errors)) r.output_files.push_back(std::move(f));
    }
    t = trace::Trace{};  // free the tables; the reports are written
  }
  if (ranks.empty()) {
    throw no_device_work(traces.size() == 1 && r.skipped.empty() ? traces.front().path
                                                                 : o.trace.string());
  }
  r.num_ranks = ranks.size();
  if (collectives) write_collective_report(std::move(collection), out_root, o, r);
  r.total_s = seconds_since(t_start);
  return r;
}

json stage_result_json(const TraceLensStageResult& sr) {
  json j = {{"stage", sr.key},
            {"trace_path", sr.trace_path},
            {"output_dir", sr.output_dir.string()},
            {"files", sr.files},
            {"simple_summary_file", sr.simple_summary_file}};
  if (sr.error) j["error"] = *sr.error;
  j["phase_pick"] = pick_json(sr.pick, sr.key, sr.label);
  j["summary"] = {{"gpu_events", sr.gpu_events},
                  {"kernel_time_us", sr.kernel_time_us},
                  {"ops", sr.ops},
                  {"unattributed_events", sr.unattributed_events},
                  {"graph_events", sr.graph_events},
                  {"graph_events_attributed", sr.graph_events_attributed}};
  return j;
}

}  // namespace

json tracelens_manifest_json(const TraceLensResult& r) {
  json m = {{"enabled", true},
            {"analysis_mode", r.mode},
            {"trace_dir", r.trace_dir},
            {"output_files", r.output_files},
            {"errors", r.errors},
            {"warnings", r.warnings},
            {"environment", gpu::environment_json(r.environment)}};
  m["ranks"] = json::array();
  for (const auto& k : r.ranks) {
    m["ranks"].push_back({{"rank", k.rank}, {"rank_source", k.source}, {"cycle", k.cycle},
                          {"cycles", k.cycles}, {"trace_file", k.file}});
  }
  m["skipped"] = json::array();
  for (const auto& k : r.skipped)
    m["skipped"].push_back({{"file", k.file}, {"kind", k.kind}, {"reason", k.reason}});
  if (r.collective_report) {
    const auto& c = *r.collective_report;
    m["collective_report"] = {{"ranks", c.ranks},
                              {"collective_kernels", c.collective_kernels},
                              {"rows", c.rows},
                              {"files", c.files}};
  }
  if (r.mode == "pytorch") {
    m["num_ranks"] = r.num_ranks;
    m["export_format"] = r.export_format;
    return m;
  }
  m["analysis_stages"] = json::array();
  for (Stage s : r.stages) m["analysis_stages"].push_back(std::string(to_string(s)));
  m["rank0_trace"] = r.rank0_trace;
  m["gpu_arch_platform"] = r.gpu_arch_platform ? json(*r.gpu_arch_platform) : json(nullptr);
  m["gpu_arch_reason"] = r.gpu_arch_reason;
  if (r.graph_attribution) {
    const auto& g = *r.graph_attribution;
    m["graph_attribution"] = {{"capture_dir", g.capture_dir.string()},
                              {"capture_traces", g.capture_traces},
                              {"captured_launches", g.captured_launches},
                              {"graph_launches", g.graph_launches},
                              {"graph_kernels", g.graph_kernels},
                              {"attributed_kernels", g.attributed_kernels},
                              {"attributed_to_op", g.attributed_to_op},
                              {"coverage_pct", g.coverage_pct},
                              {"captured_graphs", g.captured_graphs},
                              {"graphs", json::array()}};
    // One entry per captured graph (and one for name-aligned replays); capped
    // so a run with thousands of graphs keeps a readable manifest.
    constexpr size_t kMaxGraphsListed = 64;
    for (size_t i = 0; i < g.graphs.size() && i < kMaxGraphsListed; ++i) {
      const auto& s = g.graphs[i];
      m["graph_attribution"]["graphs"].push_back({{"captured_graph", s.graph},
                                                  {"method", s.method},
                                                  {"replays", s.replays},
                                                  {"kernels", s.kernels},
                                                  {"attributed", s.attributed},
                                                  {"reason", s.reason}});
    }
    if (g.graphs.size() > kMaxGraphsListed)
      m["graph_attribution"]["graphs_not_listed"] = g.graphs.size() - kMaxGraphsListed;
  }
  m["split_method"] = r.split_method;
  m["iterations"] = r.iterations;
  m["stage_results"] = json::object();
  m["phase_picks"] = json::object();
  for (const auto& sr : r.stage_results) {
    m["stage_results"][sr.key] = stage_result_json(sr);
    m["phase_picks"][sr.key] = pick_json(sr.pick, sr.key, sr.label);
  }
  m["timing_s"] = {{"load", r.load_s}, {"analyse_and_write", r.analyse_s}, {"total", r.total_s}};
  return m;
}

TraceLensResult run_tracelens(const TraceLensOptions& o) {
  if (!fs::exists(o.trace)) throw Error(ErrorKind::kNotFound, "trace not found", o.trace.string());
  if (o.mode != "inference" && o.mode != "pytorch") {
    throw Error(ErrorKind::kUsage, "--mode must be inference or pytorch, not " + o.mode);
  }
  if (o.write_excel && !report::xlsx_available() && !o.write_csv) {
    throw Error(ErrorKind::kUsage, "this magpie was built without libxlsxwriter: no Excel output",
                "", std::nullopt, "use --export-format csv, or rebuild with libxlsxwriter-dev");
  }
  const fs::path out_root = o.output_dir / "tracelens";
  fs::create_directories(out_root);
  TraceLensResult r = o.mode == "pytorch" ? run_pytorch(o, out_root) : run_inference(o, out_root);
  gpu::EnvironmentRequest env;
  env.gpu_indices = std::vector<int>{};  // a trace analysis runs on the CPU
  r.environment = gpu::capture_environment(env);
  r.manifest = out_root / "tracelens_manifest.json";
  r.output_files.push_back(r.manifest.string());
  write_file_atomic(r.manifest, tracelens_manifest_json(r).dump(2) + "\n");
  return r;
}

}  // namespace magpie::analysis
