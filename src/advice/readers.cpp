#include "advice/readers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <system_error>

#include "advice/rules.hpp"
#include "analysis/gpu_arch.hpp"
#include "core/csv_line.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::advice {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A number written as a JSON number or as its text (CSV cells); nullopt for
// empty, non-numeric or non-finite values.
std::optional<double> number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty()) return std::nullopt;
  double out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(out)) return std::nullopt;
  return out;
}

std::optional<double> number_at(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
  return number(obj.at(key));
}

std::string text_at(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return {};
  const auto& v = obj.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return {};
}

std::vector<std::string> strings_at(const json& obj, const char* key) {
  std::vector<std::string> out;
  if (!obj.is_object() || !obj.contains(key) || !obj.at(key).is_array()) return out;
  for (const auto& e : obj.at(key)) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// performance_result.summary entries are {value, unit, peak?, pct_of_peak?} or a bare number.
struct Metric {
  std::optional<double> value, peak, pct_of_peak;
};
Metric metric(const json& summary, const char* key) {
  Metric m;
  if (!summary.is_object() || !summary.contains(key)) return m;
  const auto& v = summary.at(key);
  if (v.is_object()) {
    m.value = number_at(v, "value");
    m.peak = number_at(v, "peak");
    m.pct_of_peak = number_at(v, "pct_of_peak");
  } else {
    m.value = number(v);
  }
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// "matrix_bf16" → the arch's peak for that unit and precision, with the
// fallbacks the roofline itself uses (analysis::peak_tflops).
std::optional<double> arch_peak(const analysis::GpuArch& arch, const std::string& spec) {
  static const std::map<std::string, const char*> kDtype{
      {"bf16", "c10::BFloat16"}, {"fp16", "c10::Half"},         {"fp32", "float"},
      {"fp64", "double"},        {"fp8", "c10::Float8_e4m3fn"}, {"fp4", "c10::Float4_e2m1fn_x2"},
      {"int8", "signed char"}};
  auto us = spec.find('_');
  if (us == std::string::npos) return std::nullopt;
  auto dtype = kDtype.find(spec.substr(us + 1));
  if (dtype == kDtype.end()) return std::nullopt;
  return analysis::peak_tflops(arch, dtype->second, spec.substr(0, us) == "matrix");
}

}  // namespace

AnalyzeInput read_analyze_result(const json& state) {
  AnalyzeInput in;
  const json extra = state.value("extra", json::object());
  in.kernel_id = text_at(extra, "kernel_id");
  in.score = number_at(state, "score");
  in.correctness.compiling_state = text_at(state, "compiling_state");
  in.correctness.correctness_state = text_at(state, "correctness_state");
  const char* failed_stage =
      in.correctness.compiling_state == "FAILED" ? "compiling_result" : "correctness_result";
  in.correctness.errors = strings_at(state.value(failed_stage, json::object()), "errors");
  if (in.correctness.errors.empty()) in.correctness.errors = strings_at(state, "errors");
  in.performance_state = text_at(state, "performance_state");
  const json perf = state.value("performance_result", json::object());
  in.performance_errors = strings_at(perf, "errors");

  const json summary = perf.is_object() ? perf.value("summary", json::object()) : json::object();
  const Metric tbps = metric(summary, "achieved_tbps");
  const Metric tflops = metric(summary, "achieved_tflops");
  const Metric bytes = metric(summary, "dram_bytes");
  const Metric flops = metric(summary, "flops");
  const Metric median_time = metric(summary, "median_time");  // µs
  auto& r = in.roofline;
  r.subject = in.kernel_id.empty() ? "kernel" : in.kernel_id;
  // A peak missing beside its pct_of_peak follows from the two.
  auto peak_of = [](const Metric& m) -> std::optional<double> {
    if (m.peak) return m.peak;
    if (m.value && m.pct_of_peak && *m.pct_of_peak > 0) return *m.value * 100 / *m.pct_of_peak;
    return std::nullopt;
  };
  r.achieved_tbps = tbps.value;
  r.peak_tbps = peak_of(tbps);
  r.achieved_tflops = tflops.value;
  r.peak_tflops = peak_of(tflops);
  if (bytes.value && *bytes.value > 0)
    r.arithmetic_intensity = flops.value.value_or(0) / *bytes.value;
  in.median_us = median_time.value;
  return in;
}

GapInput read_gap_report(const json& block) {
  GapInput in;
  double gpu_events = 0, graph_kernels = 0;
  if (block.contains("ranks") && block.at("ranks").is_array()) {
    for (const auto& rank : block.at("ranks")) {
      if (!rank.is_object()) continue;
      const json t = rank.value("timeline", json::object());
      TimelineObservation o;
      o.subject = fmt::format("rank {}", text_at(rank, "rank"));
      o.span_us = number_at(t, "span_us").value_or(0);
      o.busy_us = number_at(t, "busy_us").value_or(0);
      o.idle_us = number_at(t, "idle_us").value_or(0);
      o.computation_us = number_at(t, "computation_us").value_or(0);
      o.exposed_communication_us = number_at(t, "exposed_communication_us").value_or(0);
      in.timelines.push_back(std::move(o));
      const json links = rank.value("links", json::object());
      gpu_events += number_at(links, "gpu_events").value_or(0);
      graph_kernels += number_at(links, "graph_kernels").value_or(0);
    }
  }
  double top_calls = 0, top_us = 0;
  in.launches.subject = "all kernels";
  in.launches.min_launches = kMinTraceLaunches;
  if (block.contains("top_kernels") && block.at("top_kernels").is_array()) {
    for (const auto& k : block.at("top_kernels")) {
      if (!k.is_object()) continue;
      const double calls = number_at(k, "calls").value_or(0);
      const double total = number_at(k, "self_cuda_total_us").value_or(0);
      const double avg = number_at(k, "avg_time_us").value_or(calls > 0 ? total / calls : 0);
      in.launches.rows.emplace_back(calls, avg);
      top_calls += calls;
      top_us += total;
      in.hot_kernels.push_back({text_at(k, "name"), text_at(k, "category"),
                                number_at(k, "pct_total").value_or(0), calls, avg});
    }
  }
  // Kernels past top-k: their count from the ranks' GPU events, their mean from the remaining time.
  const double total_us = number_at(block, "total_duration_us").value_or(top_us);
  const double rest_calls = gpu_events - top_calls, rest_us = total_us - top_us;
  if (rest_calls > 0 && rest_us > 0)
    in.launches.rows.emplace_back(rest_calls, rest_us / rest_calls);
  if (gpu_events > 0) in.launches.graph_share = graph_kernels / gpu_events;
  return in;
}

RooflineRowsInput read_roofline_rows(const json& rows, const std::string& gpu_arch) {
  if (!rows.is_array()) {
    throw Error(ErrorKind::kBadFormat,
                "TraceLens roofline rows must be a JSON array of row objects", {}, std::nullopt,
                "pass the rows of a *_kernel_roofline_simple.csv keyed by column name");
  }
  RooflineRowsInput in;
  in.launches.subject = "all kernels";
  in.launches.min_launches = kMinTraceLaunches;
  double graph_launches = 0, all_launches = 0;
  std::vector<double> derived_bw;
  std::map<std::string, std::vector<double>> derived_peak;  // by compute_spec
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (!row.is_object() || !row.contains("op_name")) {
      throw Error(ErrorKind::kBadFormat, fmt::format("roofline row {} has no op_name", i), {},
                  std::nullopt,
                  "each row needs the *_kernel_roofline_simple.csv columns (op_name, time_pct, "
                  "roofline_bound, ...)");
    }
    const std::string category = text_at(row, "source_category");
    const double calls = number_at(row, "operation_count").value_or(0);
    const double per_call = number_at(row, "num_kernels").value_or(1);
    const double mean_call_us = number_at(row, "kernel_time_us_mean").value_or(0);
    const double launches = calls * per_call;
    all_launches += launches;
    if (category == "graph_replay") {
      graph_launches += launches;
    } else if (launches > 0 && per_call > 0) {
      in.launches.rows.emplace_back(launches, mean_call_us / per_call);
    }

    RooflineObservation o;
    const std::string dims = text_at(row, "input_dims");
    o.subject = text_at(row, "op_name") + (dims.empty() ? "" : " " + dims);
    o.time_share = number_at(row, "time_pct").value_or(0) / 100;
    o.arithmetic_intensity = number_at(row, "arithmetic_intensity_flops_per_byte");
    o.achieved_tflops = number_at(row, "achieved_tflops_mean");
    o.achieved_tbps = number_at(row, "achieved_tbps_mean");
    o.compute_spec = text_at(row, "compute_spec");
    o.bound = text_at(row, "roofline_bound");
    o.pct_of_roof = number_at(row, "pct_roofline_mean");
    if (o.bound != "memory" && o.bound != "compute") {  // no perf model: nothing to place
      ++in.rows_without_model;
      continue;
    }
    // pct = achieved / peak on the bound side, so each row reveals that peak.
    if (o.pct_of_roof && *o.pct_of_roof > 0) {
      if (o.bound == "memory" && o.achieved_tbps)
        derived_bw.push_back(*o.achieved_tbps * 100 / *o.pct_of_roof);
      if (o.bound == "compute" && o.achieved_tflops) {
        derived_peak[o.compute_spec].push_back(*o.achieved_tflops * 100 / *o.pct_of_roof);
      }
    }
    in.rows.push_back(std::move(o));
  }
  if (all_launches > 0) in.launches.graph_share = graph_launches / all_launches;

  std::optional<analysis::GpuArch> arch;
  if (!gpu_arch.empty()) arch = analysis::find_gpu_arch(gpu_arch, analysis::builtin_gpu_archs());
  std::optional<double> bw;
  if (arch && arch->mem_bw_tbps > 0) bw = arch->mem_bw_tbps;
  if (!bw && !derived_bw.empty()) bw = median(derived_bw);
  for (auto& o : in.rows) {
    o.peak_tbps = bw;
    if (arch) o.peak_tflops = arch_peak(*arch, o.compute_spec);
    if (!o.peak_tflops) {
      auto it = derived_peak.find(o.compute_spec);
      if (it != derived_peak.end()) o.peak_tflops = median(it->second);
    }
  }
  return in;
}

RooflineRowsInput read_roofline_csv(const fs::path& csv) {
  const auto text = read_file(csv);  // throws kNotFound / kUnreadable naming the file
  std::string_view rest = text.view();
  auto next_line = [&]() -> std::optional<std::string_view> {
    if (rest.empty()) return std::nullopt;
    auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    return line;
  };
  auto header_line = next_line();
  const auto header = header_line ? split_csv_line(*header_line) : std::vector<std::string>{};
  for (const char* need : {"op_name", "time_pct", "roofline_bound", "pct_roofline_mean"}) {
    if (std::find(header.begin(), header.end(), need) == header.end()) {
      throw Error(ErrorKind::kBadFormat, fmt::format("no '{}' column", need), csv.string(),
                  std::nullopt, "pass a *_kernel_roofline_simple.csv written by magpie tracelens");
    }
  }
  json rows = json::array();
  while (auto line = next_line()) {
    if (line->empty() || *line == "\r") continue;
    auto cells = split_csv_line(*line);
    json row = json::object();
    for (size_t c = 0; c < header.size() && c < cells.size(); ++c) row[header[c]] = cells[c];
    rows.push_back(std::move(row));
  }

  const fs::path dir = csv.parent_path();
  std::string gpu_arch;
  std::error_code ec;
  if (fs::exists(dir / "tracelens_manifest.json", ec)) {
    auto manifest = json::parse(read_file(dir / "tracelens_manifest.json").view(), nullptr, false);
    if (manifest.is_object()) gpu_arch = text_at(manifest, "gpu_arch_platform");
  }
  RooflineRowsInput in = read_roofline_rows(rows, gpu_arch);
  // <label>_ISL<isl>_OSL<osl>_CONC<conc>_kernel_roofline_simple.csv → <label>
  const std::string name = csv.filename().string();
  in.stage = name.substr(0, std::min(name.find("_ISL"), name.find("_kernel_roofline_simple")));

  const fs::path timeline_csv = dir / in.stage / "gpu_timeline.csv";
  if (!in.stage.empty() && fs::exists(timeline_csv, ec)) {
    const auto tl = read_file(timeline_csv);
    std::map<std::string, double> ms;
    std::string_view lines = tl.view();
    while (!lines.empty()) {
      auto nl = lines.find('\n');
      auto cells = split_csv_line(lines.substr(0, nl));
      lines = nl == std::string_view::npos ? std::string_view{} : lines.substr(nl + 1);
      if (cells.size() >= 2) {
        if (auto v = number(json(cells[1]))) ms[cells[0]] = *v;
      }
    }
    TimelineObservation t;
    t.subject = in.stage;
    t.span_us = ms["total_time"] * 1e3;
    t.busy_us = ms["busy_time"] * 1e3;
    t.idle_us = ms["idle_time"] * 1e3;
    t.computation_us = ms["computation_time"] * 1e3;
    t.exposed_communication_us = ms["exposed_comm_time"] * 1e3;
    if (t.span_us > 0) in.timeline = t;
  }
  return in;
}

}  // namespace magpie::advice
