#include "analysis/gap_analysis_report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <set>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "report/csv_writer.hpp"
#include "report/text_table.hpp"
#include "sources/magpie_columns.hpp"
#include "sources/source_index.hpp"
#include "trace/rank_discovery.hpp"

namespace magpie::analysis {

namespace fs = std::filesystem;
using report::fixed;

namespace {

// Magpie's six; the time column is named for what it measures (time_basis).
std::vector<std::string> base_columns(TimeBasis basis) {
  return {"Name", "Calls", std::string(total_time_column(basis)), "Avg time (us)", "% Total",
          "Input Shapes"};
}
const std::vector<std::string> kOurColumns = {"Normalized Name", "Category",  "Median (us)",
                                              "Min (us)",        "Max (us)",  "Std (us)",
                                              "Cumulative %",    "Launching Op"};
const std::vector<std::string> kSourceConfidenceColumns = {"Source Confidence", "Source Candidates",
                                                           "Source Locations"};

std::vector<std::string> base_fields(const KernelRow& r) {
  return {r.name, std::to_string(r.calls), fixed(r.total_us), fixed(r.avg_us), fixed(r.pct_total),
          r.input_shapes};
}

std::vector<std::string> our_fields(const KernelRow& r) {
  return {r.parsed.normalized,
          std::string(sources::to_string(r.parsed.category)),
          fixed(r.median_us, 3),
          fixed(r.min_us, 3),
          fixed(r.max_us, 3),
          fixed(r.std_us, 3),
          fixed(r.cumulative_pct),
          r.launching_op};
}

std::string locations_text(const sources::SourceMatch& m, const sources::RepoVars& vars) {
  std::string out;
  for (const auto& c : m.candidates) {
    if (!out.empty()) out += "; ";
    std::string_view var = vars.var_for(c.repo);
    out.append(var.empty() ? c.repo : std::string(var)).append("/").append(c.file);
    out.append(":").append(std::to_string(c.line));
  }
  return out;
}

std::string stamp(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%Y%m%d_%H%M%S}", tm);
}

// <parent>/<base>, else <base>_2, _3...: the first that mkdir(2) creates.
fs::path claim_dir(const fs::path& parent, const std::string& base) {
  fs::create_directories(parent);
  for (int i = 1;; ++i) {
    fs::path dir = parent / (i == 1 ? base : fmt::format("{}_{}", base, i));
    std::error_code ec;
    if (fs::create_directory(dir, ec)) return dir;
    if (ec) throw Error(ErrorKind::kUnreadable, "cannot create the report folder: " + ec.message(),
                        dir.string(), std::nullopt, "pass an -o/--output-dir you can write to");
  }
}

constexpr const char* kLatestLink = "gap_analysis";

}  // namespace

fs::path make_gap_run_dir(const fs::path& output_dir) {
  return claim_dir(output_dir, std::string(kLatestLink) + "_" + stamp(std::time(nullptr)));
}

std::optional<MovedGapFolder> link_latest_gap_run(const fs::path& output_dir, const fs::path& run_dir) {
  const fs::path link = output_dir / kLatestLink;
  std::optional<MovedGapFolder> moved;
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(link, ec))) {
    // An older Magpie's fixed folder: keep its run, under a run folder's name.
    auto when = fs::last_write_time(link / "gap_analysis.json", ec);
    if (ec) when = fs::last_write_time(link, ec);
    const auto t = ec ? std::time(nullptr)
                      : std::chrono::system_clock::to_time_t(std::chrono::file_clock::to_sys(when));
    fs::path to = claim_dir(output_dir, std::string(kLatestLink) + "_" + stamp(t));
    // As the results store keyed it: canonical, taken while it is still a folder.
    fs::path from = fs::weakly_canonical(fs::absolute(link), ec);
    if (ec) from = fs::absolute(link).lexically_normal();
    fs::rename(link, to);  // rename(2) replaces the empty folder claimed for the name
    moved = MovedGapFolder{from, to};
  }
  // A fresh link beside the old one, renamed over it: never a moment without one.
  const fs::path tmp = output_dir / fmt::format(".{}.{}.tmp", kLatestLink, ::getpid());
  fs::remove(tmp, ec);
  fs::create_directory_symlink(run_dir.filename(), tmp);
  fs::rename(tmp, link);
  return moved;
}

namespace {

// One table for every rank's critical-path section: windows (whole trace,
// median step) with their breakdown, the top ops on the path beside their
// kernel share and gain bounds, and the ranked fixes (`order` 1 = first).
std::string critical_path_csv(const GapAnalysisResult& result) {
  report::CsvWriter csv;
  std::vector<std::string> head{"rank", "bound", "row", "order", "name", "stage", "length_us"};
  for (size_t c = 0; c < kPathCategories; ++c)
    head.push_back(std::string(to_string(static_cast<PathCategory>(c))) + "_pct");
  for (const char* h : {"path_pct", "kernel_pct", "gpu_gain_bound_us", "host_gain_bound_us", "kernel_rank",
                        "predicted_gain_us", "predicted_gain_pct", "kind"})
    head.push_back(h);
  csv.row(head);
  const size_t width = head.size();
  auto pct = [](int64_t part, int64_t whole) {
    return whole > 0 ? fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 2) : std::string("0.00");
  };
  auto us = [](int64_t ns) { return fixed(static_cast<double>(ns) / 1e3, 3); };
  for (const auto& r : result.ranks) {
    if (!r.critical_path) continue;
    const CriticalPathSummary& s = *r.critical_path;
    const std::string rank = std::to_string(r.rank);
    auto base = [&](const char* row, size_t order, const std::string& name) {
      std::vector<std::string> f(width);
      f[0] = rank, f[1] = s.bound, f[2] = row, f[3] = std::to_string(order), f[4] = name;
      return f;
    };
    auto window = [&](const char* row, const PathWindowSummary& w) {
      auto f = base(row, 0, w.label);
      f[5] = w.stage;
      f[6] = us(w.length_ns);
      for (size_t c = 0; c < kPathCategories; ++c) f[7 + c] = pct(w.by_category[c], w.length_ns);
      csv.row(f);
    };
    window("whole_trace", s.whole);
    if (s.median_step) window("median_step", *s.median_step);
    const size_t col = 7 + kPathCategories;
    size_t order = 0;
    for (const auto& o : s.ops) {
      auto f = base("op", ++order, o.name);
      f[col] = pct(o.path_ns, s.whole.length_ns);
      f[col + 1] = pct(o.kernel_ns, s.gpu_total_ns);
      for (const auto& b : s.bounds) {
        if (b.name != o.name) continue;
        f[col + 2] = us(b.gpu_gain_ns);
        f[col + 3] = us(b.host_gain_ns);
      }
      csv.row(f);
    }
    order = 0;
    for (const auto& rec : rank_recommendations(s)) {
      auto f = base("recommendation", ++order, rec.target);
      if (rec.kind == "kernel") f[col + 4] = std::to_string(rec.kernel_rank);
      f[col + 5] = us(rec.gain_ns);
      f[col + 6] = fixed(rec.gain_pct, 2);
      f[col + 7] = rec.kind;
      csv.row(f);
    }
  }
  return csv.str();
}

}  // namespace

GapReportFiles write_gap_reports(const GapAnalysisResult& result, const fs::path& output_dir,
                                 bool no_rank_csv, const SourceSearchOptions& source_options) {
  GapReportFiles files;
  files.output_dir = output_dir;
  fs::create_directories(output_dir);
  const size_t top_k = result.config.top_k;
  auto rows = make_rows(result.merged, result.total_duration_us, top_k);

  report::CsvWriter csv;
  const TimeBasis basis = time_basis(result);
  std::vector<std::string> header = base_columns(basis);
  std::optional<sources::SourceIndex> index;
  std::optional<sources::ReferenceFinder> references;
  sources::RepoVars vars;
  if (source_options.enabled) {
    index = sources::SourceIndex::build(source_options.repos);
    references.emplace(*index);
    vars = sources::make_repo_vars(source_options.repos);
    // What each $VAR stands for goes to gap_analysis.json and the console,
    // never into the CSV: comment lines break CSV readers (pandas, csv).
    for (const auto& [root, var] : vars.entries) files.repo_path_mappings.emplace_back(var, root);
    for (const auto& h : sources::magpie_source_columns_header()) header.push_back(h);
  }
  header.insert(header.end(), kOurColumns.begin(), kOurColumns.end());
  if (source_options.enabled)
    header.insert(header.end(), kSourceConfidenceColumns.begin(), kSourceConfidenceColumns.end());
  csv.row(header);
  for (const auto& r : rows) {
    auto fields = base_fields(r);
    std::optional<sources::SourceMatch> match;
    if (index) {
      match = index->find(r.parsed);
      const sources::KernelReferences refs = references->find(r.parsed, *match, r.launching_op);
      for (auto& f : sources::magpie_source_columns(r.parsed, *match, vars, refs))
        fields.push_back(std::move(f));
    }
    for (auto& f : our_fields(r)) fields.push_back(std::move(f));
    if (match) {
      fields.push_back(std::string(sources::to_string(match->confidence)));
      fields.push_back(std::to_string(match->candidate_count));
      fields.push_back(locations_text(*match, vars));
    }
    csv.row(fields);
  }
  files.csv = output_dir / "gap_analysis.csv";
  write_file_atomic(files.csv, csv.str());

  if (!no_rank_csv) {
    for (const auto& rank : result.ranks) {
      report::CsvWriter rcsv;
      rcsv.row(base_columns(basis));
      // With one rank the merged table is that rank's (merge_ranks keeps its
      // order): its rows are the ones made above, durations sorted once.
      const bool only_rank = result.ranks.size() == 1;
      for (const auto& r : only_rank ? rows : make_rows(rank.kernels, rank.total_duration_us, top_k))
        rcsv.row(base_fields(r));
      // Cycles of one rank get one file each ("gap_analysis_rank0_cycle1.csv"), never one over another.
      auto path = output_dir / fmt::format("gap_analysis_{}.csv", trace::rank_file_label(
                                                                      rank.rank, rank.cycle, rank.cycles));
      write_file_atomic(path, rcsv.str());
      files.rank_csvs.push_back(path);
    }
  }
  if (std::any_of(result.ranks.begin(), result.ranks.end(), [](const RankGapResult& r) { return r.critical_path.has_value(); })) {
    files.critical_path_csv = output_dir / "gap_analysis_critical_path.csv";
    write_file_atomic(files.critical_path_csv, critical_path_csv(result));
  }
  files.json = output_dir / "gap_analysis.json";
  write_file_atomic(files.json, gap_analysis_json(result, files).dump(2) + "\n");
  return files;
}

namespace {
size_t distinct_ranks(const GapAnalysisResult& result) {
  std::set<int> ranks;
  for (const auto& r : result.ranks) ranks.insert(r.rank);
  return ranks.size();
}
std::string capitalized(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}
}  // namespace

nlohmann::json gap_analysis_json(const GapAnalysisResult& result, const GapReportFiles& files) {
  using nlohmann::json;
  const auto& c = result.config;
  json out;
  out["config"] = {{"enabled", true},
                   {"trace_start_pct", c.start_pct},
                   {"trace_end_pct", c.end_pct},
                   {"top_k", c.top_k},
                   {"min_duration_us", c.min_duration_us},
                   {"categories", c.categories},
                   {"ignore_categories", c.ignore_categories}};
  out["total_duration_us"] = result.total_duration_us;
  // What total_duration_us and each row's self_cuda_total_us (Magpie's key)
  // measure: "device" (kernels, copies, sets), "host_self" (CPU events, self
  // time) or "mixed"; the CSV's time column is named accordingly.
  const TimeBasis basis = time_basis(result);
  out["time_basis"] = to_string(basis);
  out["time_column"] = total_time_column(basis);
  if (!result.cpu_fallback_note.empty()) out["cpu_fallback"] = result.cpu_fallback_note;
  out["num_ranks"] = distinct_ranks(result);
  json top = json::array();
  for (const auto& r : make_rows(result.merged, result.total_duration_us, c.top_k)) {
    top.push_back({{"name", r.name},
                   {"calls", r.calls},
                   {"self_cuda_total_us", r.total_us},
                   {"avg_time_us", r.avg_us},
                   {"pct_total", r.pct_total},
                   {"input_shapes", r.input_shapes},
                   {"normalized_name", r.parsed.normalized},
                   {"category", sources::to_string(r.parsed.category)},
                   {"family", sources::to_string(r.parsed.family)},
                   {"library_owned", r.parsed.library_owned},
                   {"median_us", r.median_us},
                   {"min_us", r.min_us},
                   {"max_us", r.max_us},
                   {"std_us", r.std_us},
                   {"cumulative_pct", r.cumulative_pct},
                   {"launching_op", r.launching_op}});
  }
  out["top_kernels"] = std::move(top);
  json errors = json::array();
  for (const auto& s : result.skipped) errors.push_back(s.reason);
  out["errors"] = std::move(errors);
  out["csv_path"] = files.csv.string();
  out["output_dir"] = files.output_dir.string();
  if (!files.repo_path_mappings.empty()) {
    json mappings = json::object();
    for (const auto& [var, root] : files.repo_path_mappings) mappings[var] = root;
    out["repo_path_mappings"] = std::move(mappings);
  }

  json ranks = json::array();
  for (const auto& r : result.ranks) {
    const auto& t = r.timeline;
    const auto& l = r.links;
    ranks.push_back(
        {{"rank", r.rank},
         {"rank_source", trace::to_string(r.rank_source)},
         {"cycle", r.cycle},
         {"cycles", r.cycles},
         {"trace_file", r.trace_file},
         {"total_duration_us", r.total_duration_us},
         {"num_kernel_names", r.kernels.size()},
         {"timeline",
          {{"span_us", t.span_us},
           {"busy_us", t.busy_us},
           {"idle_us", t.idle_us},
           {"computation_us", t.computation_us},
           {"exposed_communication_us", t.exposed_communication_us},
           {"exposed_memcpy_us", t.exposed_memcpy_us}}},
         {"links",
          {{"gpu_events", l.gpu_events},
           {"linked_gpu_events", l.linked_gpu_events},
           {"graph_launches", l.graph_launches},
           {"graph_kernels", l.graph_kernels},
           {"max_kernels_per_graph_launch", l.max_kernels_per_graph_launch}}},
         {"ingest",
          {{"file_bytes", r.ingest.file_bytes},
           {"json_bytes", r.ingest.raw_bytes},
           {"events_seen", r.ingest.events_seen},
           {"events_kept", r.ingest.events_kept},
           {"python_function_skipped", r.ingest.python_function_skipped},
           {"malformed_events", r.ingest.malformed_events}}},
         {"warnings", r.warnings}});
    if (r.critical_path) ranks.back()["critical_path"] = to_json(*r.critical_path);
  }
  out["ranks"] = std::move(ranks);
  if (!files.critical_path_csv.empty()) out["critical_path_csv"] = files.critical_path_csv.string();
  json skipped = json::array();
  for (const auto& s : result.skipped)
    skipped.push_back({{"file", s.file}, {"kind", s.kind}, {"reason", s.reason}});
  out["skipped"] = std::move(skipped);
  out["warnings"] = result.warnings;
  json rank_csvs = json::array();
  for (const auto& p : files.rank_csvs) rank_csvs.push_back(p.string());
  out["rank_csv_paths"] = std::move(rank_csvs);
  out["environment"] = gpu::environment_json(result.environment);
  return out;
}

std::string gap_console_summary(const GapAnalysisResult& result, const GapReportFiles& files) {
  const auto& c = result.config;
  std::string out = fmt::format("Gap Analysis ({:g}%-{:g}% window, category-filtered)\n", c.start_pct,
                                c.end_pct);
  // "Ranks analyzed: 2 (0, 1)"; cycles of one rank are said so: "1 (0: 2 profiling cycles)".
  std::string ranks;
  for (size_t i = 0; i < result.ranks.size(); ++i) {
    const auto& r = result.ranks[i];
    if (r.cycle > 0) continue;
    if (!ranks.empty()) ranks.append(", ");
    ranks.append(std::to_string(r.rank));
    if (r.cycles > 1) ranks.append(fmt::format(": {} profiling cycles", r.cycles));
  }
  out += fmt::format("Ranks analyzed: {} ({})\n", distinct_ranks(result), ranks);
  out += fmt::format("Total duration: {:.2f} us\n", result.total_duration_us);
  for (const auto& r : result.ranks) {
    const auto& t = r.timeline;
    double span = t.span_us > 0 ? t.span_us : 1;
    out += fmt::format(
        "{} GPU timeline: busy {:.1f}% | idle {:.1f}% | compute {:.1f}% | exposed comm "
        "{:.1f}% | exposed memcpy {:.1f}% of {:.2f} us\n",
        capitalized(trace::rank_label(r.rank, r.cycle, r.cycles)), 100 * t.busy_us / span, 100 * t.idle_us / span, 100 * t.computation_us / span,
        100 * t.exposed_communication_us / span, 100 * t.exposed_memcpy_us / span, t.span_us);
    if (r.critical_path)
      out += fmt::format("{} critical path: {}\n", capitalized(trace::rank_label(r.rank, r.cycle, r.cycles)),
                         headline(*r.critical_path));
  }
  out += "\n";
  const TimeBasis basis = time_basis(result);
  std::string time_col(total_time_column(basis));
  time_col.replace(time_col.find(" total"), 6, "");  // "Self CUDA (us)"
  std::vector<report::TextColumn> cols = {{"Name", false, 50},
                                          {"Calls", true, 0},
                                          {time_col, true, 0},
                                          {"Avg (us)", true, 0},
                                          {"% Total", true, 0}};
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : make_rows(result.merged, result.total_duration_us, c.top_k))
    rows.push_back({r.name, std::to_string(r.calls), fixed(r.total_us), fixed(r.avg_us),
                    fixed(r.pct_total)});
  out += report::render_text_table(cols, rows);
  if (!result.skipped.empty()) {
    out += fmt::format("\nSkipped {} file(s):\n", result.skipped.size());
    for (const auto& s : result.skipped) out += "  " + s.reason + "\n";
  }
  if (!files.repo_path_mappings.empty()) {
    out += "\nRepository path mappings (source columns):\n";
    for (const auto& [var, root] : files.repo_path_mappings) out += "  " + var + "=" + root + "\n";
  }
  out += fmt::format("\nOutput: {}\n", files.output_dir.string());
  return out;
}

}  // namespace magpie::analysis
