#include "analysis/tracelens_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/statistics.hpp"
#include "sources/kernel_name.hpp"

namespace magpie::analysis {

using report::Cell;
using report::Table;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;  // TraceLens's "MB"

Cell num(double v) { return Cell{v}; }
Cell count(size_t v) { return Cell{static_cast<int64_t>(v)}; }
Cell text(std::string s) { return Cell{std::move(s)}; }
double pct(double part, double whole) { return whole > 0 ? part / whole * 100.0 : 0.0; }

// Kernels per call: an integer when every call launched the same number.
Cell kernels_per_call(const OpGroup& g) {
  if (g.calls > 0 && g.kernels % g.calls == 0) return count(g.kernels / g.calls);
  return num(static_cast<double>(g.kernels) / static_cast<double>(g.calls));
}

std::vector<std::pair<std::string, std::string>> params_of(const OpGroup& g) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!g.cost || g.cost->params_json.empty()) return out;
  auto j = nlohmann::json::parse(g.cost->params_json, nullptr, false);
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out.emplace_back(it.key(), it->is_string()         ? it->get<std::string>()
                               : it->is_number_float() ? report::format_number(it->get<double>())
                                                       : it->dump());
  }
  return out;
}

// Roofline cells shared by the category tables and the compact summary.
struct PerfCells {
  Cell gflops, mb, ai, tflops, tbps, spec, bound, pct_roof, roof_time;
};
PerfCells perf_cells(const OpGroup& g) {
  if (!g.cost) return {};
  const auto& p = g.first.point;
  return {num(g.cost->flops / 1e9),
          num(g.cost->bytes / kMiB),
          num(p.arithmetic_intensity),
          num(g.mean_achieved_tflops),
          num(g.mean_achieved_tbps),
          text(g.first.compute_spec),
          p.bound.empty() ? Cell{} : text(p.bound),
          p.bound.empty() ? Cell{} : num(g.mean_pct_roofline),
          p.bound.empty() ? Cell{} : num(p.roofline_time_us)};
}

Table gpu_timeline_table(const StageAnalysis& a) {
  Table t{"gpu_timeline", {"type", "time ms", "percent"}, {}};
  const auto& tl = a.timeline;
  const double span = tl.span_us;
  for (auto [name, us] :
       {std::pair{"computation_time", tl.computation_us},
        std::pair{"exposed_comm_time", tl.exposed_communication_us},
        std::pair{"exposed_memcpy_time", tl.exposed_memcpy_us}, std::pair{"busy_time", tl.busy_us},
        std::pair{"idle_time", tl.idle_us}, std::pair{"total_time", span}}) {
    t.rows.push_back({text(name), num(us / 1e3), num(pct(us, span))});
  }
  return t;
}

Table ops_summary_table(const StageAnalysis& a) {
  Table t{"ops_summary",
          {"name", "op category", "operation_count", "num_kernels", "Kernel Time (µs)_sum",
           "Kernel Time (µs)_mean", "Percentage (%)", "Cumulative Percentage (%)"},
          {}};
  std::map<std::pair<std::string, std::string>, std::tuple<size_t, size_t, double>> by_name;
  for (const auto& c : a.calls) {
    auto& [calls, kernels, us] = by_name[{c.name, c.category}];
    ++calls;
    kernels += c.gpu_rows.size();
    us += c.kernel_us;
  }
  std::vector<std::pair<std::pair<std::string, std::string>, std::tuple<size_t, size_t, double>>>
      rows(by_name.begin(), by_name.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](auto& x, auto& y) { return std::get<2>(x.second) > std::get<2>(y.second); });
  double cumulative = 0;
  for (const auto& [key, v] : rows) {
    const auto& [calls, kernels, us] = v;
    cumulative += pct(us, a.total_gpu_us);
    t.rows.push_back({text(key.first), text(key.second), count(calls), count(kernels), num(us),
                      num(us / static_cast<double>(calls)), num(pct(us, a.total_gpu_us)),
                      num(cumulative)});
  }
  return t;
}

Table by_category_table(const StageAnalysis& a) {
  Table t{
      "ops_summary_by_category",
      {"op category", "operation_count", "num_kernels", "Kernel Time (µs)_sum", "Percentage (%)"},
      {}};
  std::map<std::string, std::tuple<size_t, size_t, double>> by_cat;
  for (const auto& c : a.calls) {
    auto& [calls, kernels, us] = by_cat[c.category];
    ++calls;
    kernels += c.gpu_rows.size();
    us += c.kernel_us;
  }
  std::vector<std::pair<std::string, std::tuple<size_t, size_t, double>>> rows(by_cat.begin(),
                                                                               by_cat.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](auto& x, auto& y) { return std::get<2>(x.second) > std::get<2>(y.second); });
  for (const auto& [cat, v] : rows) {
    const auto& [calls, kernels, us] = v;
    t.rows.push_back(
        {text(cat), count(calls), count(kernels), num(us), num(pct(us, a.total_gpu_us))});
  }
  return t;
}

Table kernel_table(const StageAnalysis& a) {
  Table t{"kernel_summary",
          {"name",
           "normalized_name",
           "kernel_category",
           "family",
           "calls",
           "Kernel Time (µs)_sum",
           "Kernel Time (µs)_mean",
           "Kernel Time (µs)_median",
           "Kernel Time (µs)_min",
           "Kernel Time (µs)_max",
           "Percentage (%)",
           "launching_op",
           "modelled_calls",
           "Compute Spec",
           "Roofline Bound",
           "FLOPS/Byte",
           "TFLOPS/s_mean",
           "TB/s_mean",
           "Pct Roofline_mean",
           "Roofline Time (µs)",
           "Peak Check"},
          {}};
  for (const auto& k : a.kernels) {
    std::vector<double> d = k.durations_us;
    const stats::Summary s = stats::summarize(d);
    const auto parsed = sources::parse_kernel_name(k.name);
    std::string top_op;
    size_t top_n = 0;
    for (const auto& [op, n] : k.ops) {
      if (n > top_n) top_op = op, top_n = n;
    }
    const bool m = k.modelled > 0 && !k.bound.empty();
    t.rows.push_back({text(k.name),
                      text(parsed.normalized),
                      text(std::string(sources::to_string(parsed.category))),
                      text(std::string(sources::to_string(parsed.family))),
                      count(s.count),
                      num(k.total_us),
                      num(s.mean),
                      num(s.median),
                      num(s.min),
                      num(s.max),
                      num(pct(k.total_us, a.total_gpu_us)),
                      text(top_op),
                      count(k.modelled),
                      m ? text(k.compute_spec) : Cell{},
                      m ? text(k.bound) : Cell{},
                      m ? num(k.arithmetic_intensity) : Cell{},
                      m ? num(k.mean_achieved_tflops) : Cell{},
                      m ? num(k.mean_achieved_tbps) : Cell{},
                      m ? num(k.mean_pct_roofline) : Cell{},
                      m ? num(k.roofline_time_us) : Cell{},
                      text(k.above_peak)});
  }
  return t;
}

std::vector<Table> category_tables(const StageAnalysis& a) {
  std::map<std::string, std::vector<const OpGroup*>> by_cat;
  for (const auto& g : a.groups) by_cat[g.category].push_back(&g);
  std::vector<Table> out;
  for (const auto& [cat, groups] : by_cat) {
    std::vector<std::string> param_keys;
    for (const OpGroup* g : groups) {
      for (const auto& [k, v] : params_of(*g)) {
        if (std::find(param_keys.begin(), param_keys.end(), k) == param_keys.end()) {
          param_keys.push_back(k);
        }
      }
    }
    Table t;
    t.name = cat;
    t.columns = {"name", "op category", "Input Dims", "Input type", "Concrete Inputs"};
    for (const auto& k : param_keys) t.columns.push_back("param: " + k);
    for (const char* c :
         {"operation_count", "num_kernels", "Kernel Time (µs)_sum", "Kernel Time (µs)_mean",
          "Kernel Time (µs)_min", "Kernel Time (µs)_max", "Percentage (%)", "GFLOPS",
          "Data Moved (MB)", "FLOPS/Byte", "TFLOPS/s_mean", "TB/s_mean", "Compute Spec",
          "Peak TFLOPS", "Roofline Bound", "Pct Roofline_mean", "Roofline Time (µs)_first",
          "has_perf_model", "Peak Check"}) {
      t.columns.emplace_back(c);
    }
    for (const OpGroup* g : groups) {
      std::vector<Cell> row{text(g->name), text(g->category), text(g->input_dims),
                            text(g->input_type), text(g->concrete_inputs)};
      const auto params = params_of(*g);
      for (const auto& k : param_keys) {
        auto it = std::find_if(params.begin(), params.end(), [&](auto& p) { return p.first == k; });
        row.push_back(it == params.end() ? Cell{} : text(it->second));
      }
      const auto [mn, mx] = std::minmax_element(g->call_us.begin(), g->call_us.end());
      const PerfCells p = perf_cells(*g);
      const double n = static_cast<double>(g->calls);
      for (Cell c :
           {count(g->calls), kernels_per_call(*g), num(g->total_us), num(g->total_us / n), num(*mn),
            num(*mx), num(pct(g->total_us, a.total_gpu_us)), p.gflops, p.mb, p.ai, p.tflops, p.tbps,
            p.spec, g->cost && g->first.peak_tflops > 0 ? num(g->first.peak_tflops) : Cell{},
            p.bound, p.pct_roof, p.roof_time, Cell{g->cost.has_value()}, text(g->above_peak)}) {
        row.push_back(std::move(c));
      }
      t.rows.push_back(std::move(row));
    }
    out.push_back(std::move(t));
  }
  return out;
}

Table simple_summary_table(const StageAnalysis& a) {
  Table t{"kernel_roofline_simple", simple_summary_columns(), {}};
  for (const auto& g : a.groups) {
    std::string signature, params_json;
    const auto params = params_of(g);
    nlohmann::json pj = nlohmann::json::object();
    for (const auto& [k, v] : params) {
      signature += (signature.empty() ? "" : ",") + k + "=" + v;
      pj[k] = v;
    }
    if (!params.empty()) params_json = pj.dump();  // keys sorted, compact: as Magpie writes it
    const PerfCells p = perf_cells(g);
    t.rows.push_back({text(g.category),
                      text(g.name),
                      text(signature),
                      count(g.calls),
                      kernels_per_call(g),
                      text(fmt::format("{:.6g}", g.total_us / 1e3)),
                      num(pct(g.total_us, a.total_gpu_us)),
                      num(g.total_us / static_cast<double>(g.calls)),
                      p.gflops,
                      p.mb,
                      p.ai,
                      p.tflops,
                      p.tbps,
                      p.spec,
                      p.bound,
                      p.pct_roof,
                      p.roof_time,
                      Cell{g.cost.has_value()},
                      text(params_json),
                      text(g.input_dims),
                      text(g.input_type),
                      text(g.above_peak)});
  }
  return t;
}

}  // namespace

const std::vector<std::string>& simple_summary_columns() {
  static const std::vector<std::string> kColumns{"source_category",
                                                 "op_name",
                                                 "param_signature",
                                                 "operation_count",
                                                 "num_kernels",
                                                 "kernel_time_ms_sum",
                                                 "time_pct",
                                                 "kernel_time_us_mean",
                                                 "gflops",
                                                 "data_moved_mb",
                                                 "arithmetic_intensity_flops_per_byte",
                                                 "achieved_tflops_mean",
                                                 "achieved_tbps_mean",
                                                 "compute_spec",
                                                 "roofline_bound",
                                                 "pct_roofline_mean",
                                                 "roofline_time_us",
                                                 "has_perf_model",
                                                 "params_json",
                                                 "input_dims",
                                                 "input_type",
                                                 "peak_check"};
  return kColumns;
}

std::vector<const Table*> StageTables::all() const {
  std::vector<const Table*> out{&gpu_timeline, &ops_summary, &ops_summary_by_category,
                                &kernel_summary};
  for (const auto& t : category_tables) out.push_back(&t);
  return out;
}

StageTables make_stage_tables(const StageAnalysis& a) {
  StageTables t;
  t.gpu_timeline = gpu_timeline_table(a);
  t.ops_summary = ops_summary_table(a);
  t.ops_summary_by_category = by_category_table(a);
  t.kernel_summary = kernel_table(a);
  t.category_tables = category_tables(a);
  t.simple_summary = simple_summary_table(a);
  return t;
}

}  // namespace magpie::analysis
