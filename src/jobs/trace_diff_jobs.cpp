#include "jobs/trace_diff_jobs.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "report/csv_writer.hpp"
#include "report/text_table.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::jobs {

using analysis::DiffStatus;
using analysis::kPathCategories;
using analysis::PathCategory;

namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
double round3(double v) { return std::round(v * 1e3) / 1e3; }
double pct_change(int64_t before, int64_t after) {
  return before > 0 ? round3(100.0 * static_cast<double>(after - before) / static_cast<double>(before)) : 0.0;
}
const char* category_name(size_t c) { return analysis::to_string(static_cast<PathCategory>(c)); }

trace::Trace load_one(const std::filesystem::path& path, const trace::IngestOptions& ingest, int rank,
                      const char* which, std::vector<std::string>& warnings) {
  std::vector<trace::Trace> ranks = trace::load_trace_ranks(path, ingest);
  size_t pick = 0;
  if (rank >= 0 && ranks.size() > 1) {
    std::string held;
    for (size_t i = 0; i < ranks.size(); ++i) {
      held += fmt::format("{}{}", held.empty() ? "" : ", ", ranks[i].rank);
      if (ranks[i].rank == rank) pick = i;
    }
    if (ranks[pick].rank != rank)
      throw Error(ErrorKind::kUsage, fmt::format("{} ({}) holds ranks {}, not rank {}: pass one of them to --rank",
                                                 which, path.string(), held, rank));
  } else if (ranks.size() > 1) {
    warnings.push_back(fmt::format("{} ({}) holds {} ranks: the diff compares its first (rank {}); --rank N "
                                   "picks another",
                                   which, path.string(), ranks.size(), ranks[0].rank));
  }
  for (const auto& w : ranks[pick].warnings) warnings.push_back(fmt::format("{}: {}", which, w));
  trace::Trace t = std::move(ranks[pick]);
  trace::links_of(t);
  return t;
}

nlohmann::json side_json(const analysis::SideSummary& s) {
  nlohmann::json window = nlohmann::json::object(), step = nlohmann::json::object();
  for (size_t c = 0; c < kPathCategories; ++c) {
    window[category_name(c)] = round3(us(s.window[c]));
    step[category_name(c)] = round3(us(s.step[c]));
  }
  return {{"trace", s.path},
          {"rank", s.rank},
          {"device", s.device},
          {"ops", s.ops},
          {"gpu_events", s.gpu_events},
          {"gpu_us", round3(us(s.gpu_ns))},
          {"bound", s.bound},
          {"window_us", round3(us(s.window_ns))},
          {"window_breakdown_us", window},
          {"iterations", s.iterations},
          {"median_step_us", round3(us(s.median_step_ns))},
          {"median_step", s.median_step},
          {"median_step_breakdown_us", step},
          {"mean_step_us", round3(us(s.mean_step_ns))}};
}

nlohmann::json breakdown_delta(const analysis::CategoryTimes& b, const analysis::CategoryTimes& a) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t c = 0; c < kPathCategories; ++c)
    j[category_name(c)] = {{"before_us", round3(us(b[c]))},
                           {"after_us", round3(us(a[c]))},
                           {"delta_us", round3(us(a[c] - b[c]))}};
  return j;
}

void write_outputs(const TraceDiffOutcome& out, const std::filesystem::path& dir,
                   std::vector<std::filesystem::path>& files) {
  std::filesystem::create_directories(dir);
  auto put = [&](const std::string& name, const std::string& text) {
    write_file_atomic(dir / name, text);
    files.push_back(dir / name);
  };
  put("trace_diff.json", report_json(out).dump(2) + "\n");
  report::CsvWriter ops, kernels;
  ops.row({"status", "op", "op_after", "parent", "input_dims", "depth", "calls_before", "calls_after",
           "host_before_us", "host_after_us", "host_delta_us", "gpu_before_us", "gpu_after_us", "gpu_delta_us"});
  for (const auto& r : out.diff.ops)
    ops.row({analysis::to_string(r.status), r.name(), r.name_after == r.name_before ? "" : r.name_after, r.parent,
             r.shapes, std::to_string(r.depth), std::to_string(r.calls_before), std::to_string(r.calls_after),
             report::fixed(us(r.host_before_ns), 3), report::fixed(us(r.host_after_ns), 3),
             report::fixed(us(r.host_after_ns - r.host_before_ns), 3), report::fixed(us(r.gpu_before_ns), 3),
             report::fixed(us(r.gpu_after_ns), 3), report::fixed(us(r.gpu_after_ns - r.gpu_before_ns), 3)});
  kernels.row({"status", "kernel", "kernel_after", "op_before", "op_after", "calls_before", "calls_after",
               "gpu_before_us", "gpu_after_us", "gpu_delta_us"});
  for (const auto& k : out.diff.kernels)
    kernels.row({analysis::to_string(k.status), k.name(), k.name_after == k.name_before ? "" : k.name_after,
                 k.op_before, k.op_after, std::to_string(k.calls_before), std::to_string(k.calls_after),
                 report::fixed(us(k.gpu_before_ns), 3), report::fixed(us(k.gpu_after_ns), 3),
                 report::fixed(us(k.gpu_after_ns - k.gpu_before_ns), 3)});
  put("trace_diff_ops.csv", ops.str());
  put("trace_diff_kernels.csv", kernels.str());
}

}  // namespace

TraceDiffOutcome run_trace_diff(const TraceDiffRequest& request, const JobContext& context) {
  TraceDiffOutcome out;
  std::vector<std::string> load_warnings;
  auto t0 = std::chrono::steady_clock::now();
  context.report(0, 4, fmt::format("reading {}", request.before.string()));
  trace::Trace before = load_one(request.before, request.ingest, request.rank, "BEFORE", load_warnings);
  if (context.cancelled()) throw Error(ErrorKind::kCancelled, "trace-diff cancelled");
  context.report(1, 4, fmt::format("reading {}", request.after.string()));
  trace::Trace after = load_one(request.after, request.ingest, request.rank, "AFTER", load_warnings);
  auto t1 = std::chrono::steady_clock::now();
  out.ingest_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (context.cancelled()) throw Error(ErrorKind::kCancelled, "trace-diff cancelled");
  context.report(2, 4, "matching ops and kernels, critical paths");
  out.diff = analysis::diff_traces(before, after, request.options);
  out.diff.warnings.insert(out.diff.warnings.begin(), load_warnings.begin(), load_warnings.end());
  out.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (!request.output_dir.empty()) {
    context.report(3, 4, fmt::format("writing {}", request.output_dir.string()));
    write_outputs(out, request.output_dir, out.files);
  }
  context.report(4, 4, "done");
  return out;
}

nlohmann::json report_json(const TraceDiffOutcome& outcome, size_t rows) {
  const auto& d = outcome.diff;
  const auto& b = d.before;
  const auto& a = d.after;
  nlohmann::json ops = nlohmann::json::array(), kernels = nlohmann::json::array();
  for (const auto& r : d.ops) {
    if (rows && ops.size() >= rows) break;
    ops.push_back({{"status", analysis::to_string(r.status)},
                   {"op", r.name()},
                   {"op_after", r.name_after},
                   {"parent", r.parent},
                   {"input_dims", r.shapes},
                   {"depth", r.depth},
                   {"calls_before", r.calls_before},
                   {"calls_after", r.calls_after},
                   {"paired_calls", r.paired_calls},
                   {"host_before_us", round3(us(r.host_before_ns))},
                   {"host_after_us", round3(us(r.host_after_ns))},
                   {"gpu_before_us", round3(us(r.gpu_before_ns))},
                   {"gpu_after_us", round3(us(r.gpu_after_ns))}});
  }
  for (const auto& k : d.kernels) {
    if (rows && kernels.size() >= rows) break;
    kernels.push_back({{"status", analysis::to_string(k.status)},
                       {"kernel", k.name()},
                       {"kernel_after", k.name_after},
                       {"op_before", k.op_before},
                       {"op_after", k.op_after},
                       {"calls_before", k.calls_before},
                       {"calls_after", k.calls_after},
                       {"gpu_before_us", round3(us(k.gpu_before_ns))},
                       {"gpu_after_us", round3(us(k.gpu_after_ns))}});
  }
  auto shares = [](const std::vector<analysis::PathShareDelta>& v, bool gpu) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& s : v) {
      if (j.size() >= 20) break;
      nlohmann::json e = {{"name", s.name},
                          {"path_before_us", round3(us(s.path_before_ns))},
                          {"path_after_us", round3(us(s.path_after_ns))},
                          {"path_delta_us", round3(us(s.delta_ns()))}};
      if (gpu) {
        e["gpu_before_us"] = round3(us(s.gpu_before_ns));
        e["gpu_after_us"] = round3(us(s.gpu_after_ns));
      }
      j.push_back(std::move(e));
    }
    return j;
  };
  nlohmann::json counts = nlohmann::json::object();
  for (auto s : {DiffStatus::kUnchanged, DiffStatus::kChanged, DiffStatus::kAdded, DiffStatus::kRemoved})
    counts["ops"][analysis::to_string(s)] = d.count_ops(s);
  for (auto s : {DiffStatus::kUnchanged, DiffStatus::kChanged, DiffStatus::kAdded, DiffStatus::kRemoved,
                 DiffStatus::kMoved})
    counts["kernels"][analysis::to_string(s)] = d.count_kernels(s);
  nlohmann::json e2e = {{"window_before_us", round3(us(b.window_ns))},
                        {"window_after_us", round3(us(a.window_ns))},
                        {"window_delta_us", round3(us(a.window_ns - b.window_ns))},
                        {"window_delta_pct", pct_change(b.window_ns, a.window_ns)},
                        {"window_breakdown", breakdown_delta(b.window, a.window)},
                        {"iterations_before", b.iterations},
                        {"iterations_after", a.iterations}};
  if (b.iterations && a.iterations) {
    e2e["median_step_before_us"] = round3(us(b.median_step_ns));
    e2e["median_step_after_us"] = round3(us(a.median_step_ns));
    e2e["median_step_delta_us"] = round3(us(a.median_step_ns - b.median_step_ns));
    e2e["median_step_delta_pct"] = pct_change(b.median_step_ns, a.median_step_ns);
    e2e["median_step_breakdown"] = breakdown_delta(b.step, a.step);
    e2e["mean_step_before_us"] = round3(us(b.mean_step_ns));
    e2e["mean_step_after_us"] = round3(us(a.mean_step_ns));
  }
  return {{"before", side_json(b)},
          {"after", side_json(a)},
          {"end_to_end", e2e},
          {"shapes_used", d.shapes_used},
          {"counts", counts},
          {"critical_path_ops", shares(d.path_ops, true)},
          {"critical_path_kernels", shares(d.path_kernels, true)},
          {"critical_path_ops_median_step", shares(d.path_ops_step, false)},
          {"ops", ops},
          {"kernels", kernels},
          {"warnings", d.warnings},
          {"ingest_seconds", outcome.ingest_seconds},
          {"analysis_seconds", outcome.analysis_seconds}};
}

std::string console_text(const TraceDiffOutcome& outcome, size_t rows) {
  const auto& d = outcome.diff;
  const auto& b = d.before;
  const auto& a = d.after;
  auto signed_us = [](int64_t ns) { return fmt::format("{:+.1f}", us(ns)); };
  auto change = [&](int64_t before, int64_t after) {
    return before > 0 ? fmt::format("{} us ({:+.1f}%)", signed_us(after - before),
                                    100.0 * static_cast<double>(after - before) / static_cast<double>(before))
                      : fmt::format("{} us", signed_us(after - before));
  };
  std::string s = fmt::format("BEFORE {} ({})\nAFTER  {} ({})\n\n", b.path, b.bound.empty() ? "-" : b.bound, a.path,
                              a.bound.empty() ? "-" : a.bound);
  s += fmt::format("end to end: whole window {:.1f} us -> {:.1f} us, {}\n", us(b.window_ns), us(a.window_ns),
                   change(b.window_ns, a.window_ns));
  const bool steps = b.iterations && a.iterations;
  if (steps)
    s += fmt::format("            median iteration {:.1f} us -> {:.1f} us, {} ({} vs {} iterations)\n",
                     us(b.median_step_ns), us(a.median_step_ns), change(b.median_step_ns, a.median_step_ns),
                     b.iterations, a.iterations);
  s += "\n";
  std::vector<std::vector<std::string>> table;
  for (size_t c = 0; c < kPathCategories; ++c) {
    const auto& bb = steps ? b.step : b.window;
    const auto& aa = steps ? a.step : a.window;
    table.push_back({category_name(c), fmt::format("{:.1f}", us(bb[c])), fmt::format("{:.1f}", us(aa[c])),
                     signed_us(aa[c] - bb[c])});
  }
  s += report::render_text_table({{steps ? "critical path (median iteration)" : "critical path (whole window)", false},
                                  {"before (us)", true},
                                  {"after (us)", true},
                                  {"change (us)", true}},
                                 table);
  table.clear();
  const bool step_ops = !d.path_ops_step.empty();
  for (const auto& p : step_ops ? d.path_ops_step : d.path_ops) {
    if (table.size() >= 10 || p.delta_ns() == 0) break;
    table.push_back({p.name, fmt::format("{:.1f}", us(p.path_before_ns)), fmt::format("{:.1f}", us(p.path_after_ns)),
                     signed_us(p.delta_ns())});
  }
  if (!table.empty())
    s += "\n" + report::render_text_table({{step_ops ? "op (time on the median iteration's critical path)" : "op (time on the whole window's critical path)", false, 56},
                                           {"before (us)", true},
                                           {"after (us)", true},
                                           {"change (us)", true}},
                                          table);
  s += fmt::format("\nops: {} changed, {} added, {} removed, {} unchanged{}\n", d.count_ops(DiffStatus::kChanged),
                   d.count_ops(DiffStatus::kAdded), d.count_ops(DiffStatus::kRemoved),
                   d.count_ops(DiffStatus::kUnchanged), d.shapes_used ? "" : " (matched without shapes)");
  table.clear();
  for (const auto& r : d.ops) {
    if (table.size() >= rows) break;
    if (r.status == DiffStatus::kUnchanged) continue;
    table.push_back({analysis::to_string(r.status), r.name(), fmt::format("{} -> {}", r.calls_before, r.calls_after),
                     signed_us(r.host_after_ns - r.host_before_ns), signed_us(r.gpu_after_ns - r.gpu_before_ns),
                     r.parent.empty() ? "-" : r.parent});
  }
  if (!table.empty())
    s += report::render_text_table({{"", false},
                                    {"op", false, 44},
                                    {"calls", false},
                                    {"host change (us)", true},
                                    {"GPU change (us)", true},
                                    {"under", false, 40}},
                                   table);
  s += fmt::format("\nkernels: {} changed, {} moved to another op, {} added, {} removed, {} unchanged\n",
                   d.count_kernels(DiffStatus::kChanged), d.count_kernels(DiffStatus::kMoved),
                   d.count_kernels(DiffStatus::kAdded), d.count_kernels(DiffStatus::kRemoved),
                   d.count_kernels(DiffStatus::kUnchanged));
  table.clear();
  for (const auto& k : d.kernels) {
    if (table.size() >= rows) break;
    if (k.status == DiffStatus::kUnchanged) continue;
    table.push_back({analysis::to_string(k.status), k.name(), fmt::format("{} -> {}", k.calls_before, k.calls_after),
                     signed_us(k.gpu_after_ns - k.gpu_before_ns),
                     k.status == DiffStatus::kMoved ? k.op_before + " => " + k.op_after
                                                    : (k.op_before.empty() ? k.op_after : k.op_before)});
  }
  if (!table.empty())
    s += report::render_text_table({{"", false},
                                    {"kernel", false, 48},
                                    {"calls", false},
                                    {"GPU change (us)", true},
                                    {"launched by", false, 48}},
                                   table);
  for (const auto& f : outcome.files) s += fmt::format("wrote {}\n", f.string());
  return s;
}

}  // namespace magpie::jobs
