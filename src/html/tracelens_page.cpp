#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/gpu_arch.hpp"
#include "html/charts.hpp"
#include "html/csv_file.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

namespace {

namespace fs = std::filesystem;

// The roof for one compute spec ("matrix_bf16"): min(peak, intensity × bandwidth).
std::optional<XYSeries> roof_line(const analysis::GpuArch& arch, const std::string& spec,
                                  double min_ai, double max_ai) {
  auto us = spec.find('_');
  if (us == std::string::npos) return std::nullopt;
  const auto& table = spec.substr(0, us) == "matrix" ? arch.matrix_tflops : arch.vector_tflops;
  auto it = table.find(spec.substr(us + 1));
  if (it == table.end() || arch.mem_bw_tbps <= 0) return std::nullopt;
  const double peak = it->second, ridge = peak / arch.mem_bw_tbps;
  XYSeries roof{
      fmt::format("{} roof {} ({} TFLOP/s, {} TB/s)", arch.name, spec, peak, arch.mem_bw_tbps),
      {},
      {},
      {},
      true};
  double lo = std::min(min_ai, ridge) / 2, hi = std::max(max_ai, ridge) * 2;
  for (double x : {lo, ridge, hi}) {
    roof.x.push_back(x);
    roof.y.push_back(std::min(peak, x * arch.mem_bw_tbps));
  }
  return roof;
}

void add_roofline(Section& section, const CsvFile& simple,
                  const std::optional<analysis::GpuArch>& arch) {
  std::map<std::string, XYSeries> by_category;
  std::set<std::string> specs;
  double min_ai = INFINITY, max_ai = 0;
  for (const auto& row : simple.rows) {
    auto ai = simple.number(row, "arithmetic_intensity_flops_per_byte");
    auto tf = simple.number(row, "achieved_tflops_mean");
    if (!ai || !tf || *ai <= 0 || *tf <= 0) continue;
    std::string category = simple.text(row, "source_category");
    auto& s = by_category[category];
    s.label = category;
    s.x.push_back(*ai);
    s.y.push_back(*tf);
    s.point_labels.push_back(simple.text(row, "op_name") + " " +
                             simple.text(row, "param_signature"));
    if (auto spec = simple.text(row, "compute_spec"); !spec.empty()) specs.insert(spec);
    min_ai = std::min(min_ai, *ai);
    max_ai = std::max(max_ai, *ai);
  }
  if (by_category.empty()) return;
  std::vector<XYSeries> series;
  for (auto& [k, s] : by_category) series.push_back(std::move(s));
  if (arch)
    for (const auto& spec : specs)
      if (auto roof = roof_line(*arch, spec, min_ai, max_ai)) series.push_back(std::move(*roof));
  section.charts.push_back(xy_chart(
      "Roofline: modelled ops",
      arch ? "Each point is an op signature (mean over its calls); lines are the GPU's roofs for "
             "the "
             "compute specs present. Points near a roof are at the hardware limit."
           : "Each point is an op signature (mean over its calls); no GPU arch known, so no roofs.",
      series, "arithmetic intensity (FLOP/byte)", "achieved TFLOP/s", true, true));
}

void add_top_kernels(Section& section, const CsvFile& kernels) {
  std::vector<std::pair<std::string, double>> rows;
  for (const auto& row : kernels.rows) {
    auto total = kernels.number(row, "Kernel Time (µs)_sum");
    if (!total) continue;
    std::string name = kernels.text(row, "normalized_name");
    rows.emplace_back(shorten(name.empty() ? kernels.text(row, "name") : name, 80), *total);
  }
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second > b.second; });
  if (rows.size() > 15) rows.resize(15);
  if (rows.empty()) return;
  std::vector<std::string> labels;
  Series s{"total (µs)", {}};
  for (auto& [n, v] : rows) {
    labels.push_back(n);
    s.values.push_back(v);
  }
  section.charts.push_back(bar_chart("Top kernels", "Kernel time in the chosen iteration.", labels,
                                     {s}, "kernel time (µs)"));
}

}  // namespace

Page tracelens_page(const analysis::TraceLensResult& result) {
  Page page;
  page.kind = "tracelens";
  page.title = fmt::format("TraceLens: {}", fs::path(result.rank0_trace).filename().string());
  page.facts = {{"mode", result.mode},
                {"GPU", result.gpu_arch_platform.value_or("unknown")},
                {"GPU choice", result.gpu_arch_reason},
                {"stage split", result.split_method},
                {"trace", result.rank0_trace}};
  for (const auto& [stage, n] : result.iterations)
    page.facts.emplace_back(fmt::format("{} iterations", stage), std::to_string(n));
  page.warnings = result.warnings;
  for (const auto& e : result.errors) page.warnings.push_back("error: " + e);

  std::optional<analysis::GpuArch> arch;
  if (result.gpu_arch_platform)
    arch = analysis::find_gpu_arch(*result.gpu_arch_platform, analysis::builtin_gpu_archs());

  if (!result.stage_results.empty()) {
    Section stages{"Stages", "One steady-state iteration per stage.", {}, {}};
    std::vector<std::string> labels;
    Series busy{"GPU busy", {}}, idle{"GPU idle", {}};
    std::map<std::string, std::vector<double>> by_category;  // category → per stage µs
    const size_t n = result.stage_results.size();
    for (size_t i = 0; i < n; ++i) {
      const auto& sr = result.stage_results[i];
      labels.push_back(
          fmt::format("{} (batch {})", sr.key, sr.pick.batch_size));
      busy.values.push_back(sr.pick.gpu_busy_us / 1000.0);
      idle.values.push_back(std::max(0.0, sr.pick.gpu_duration_us - sr.pick.gpu_busy_us) / 1000.0);
      if (auto cats = read_csv_file(sr.output_dir / "ops_summary_by_category.csv")) {
        for (const auto& row : cats->rows) {
          auto us = cats->number(row, "Kernel Time (µs)_sum");
          if (!us) continue;
          auto& v = by_category[cats->text(row, "op category")];
          v.resize(n, 0.0);
          v[i] += *us / 1000.0;
        }
      }
    }
    stages.charts.push_back(bar_chart("GPU time per stage iteration",
                                      "Busy = union of GPU activity.", labels, {busy, idle},
                                      "time (ms)", true, true));
    if (!by_category.empty()) {
      std::vector<Series> cats;
      for (auto& [k, v] : by_category) {
        v.resize(n, 0.0);
        cats.push_back({k, v});
      }
      stages.charts.push_back(bar_chart("Kernel time by op category per stage", "", labels, cats,
                                        "kernel time (ms)", true, true));
    }
    Table t{{"stage", "batch", "GPU events", "kernel time", "GPU busy", "ops",
             "unattributed events", "chosen because"},
            {}};
    for (const auto& sr : result.stage_results)
      t.rows.push_back({sr.key,
                        format_number(sr.pick.batch_size), std::to_string(sr.gpu_events),
                        format_us(sr.kernel_time_us), format_us(sr.pick.gpu_busy_us),
                        std::to_string(sr.ops), std::to_string(sr.unattributed_events),
                        sr.pick.selection_reason});
    stages.tables.push_back(std::move(t));
    page.sections.push_back(std::move(stages));
  }

  for (const auto& sr : result.stage_results) {
    Section s{fmt::format("Stage {}", sr.key), "", {}, {}};
    if (sr.error) s.text = "writer error: " + *sr.error;
    if (auto kernels = read_csv_file(sr.output_dir / "kernel_summary.csv"))
      add_top_kernels(s, *kernels);
    if (!sr.simple_summary_file.empty())
      if (auto simple = read_csv_file(sr.simple_summary_file)) add_roofline(s, *simple, arch);
    if (!s.charts.empty() || !s.text.empty()) page.sections.push_back(std::move(s));
  }
  return page;
}

}  // namespace magpie::html
