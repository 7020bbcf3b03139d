#include "store/report_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/statistics.hpp"
#include "store/serving_requests.hpp"

namespace magpie::store {

namespace fs = std::filesystem;
using nlohmann::json;
using stats::Verdict;

namespace {

// --- Serving ----------------------------------------------------------------

struct ServingMetricSpec {
  const char* name;
  const char* unit;
  bool higher_is_better;
};

// Output order of a serving diff; the statistics function fills values in this order.
constexpr std::array<ServingMetricSpec, 14> kServingMetrics{{
    {"request_throughput", "req/s", true},
    {"output_throughput", "tok/s", true},
    {"ttft_mean_ms", "ms", false},
    {"ttft_median_ms", "ms", false},
    {"ttft_p99_ms", "ms", false},
    {"tpot_mean_ms", "ms", false},
    {"tpot_median_ms", "ms", false},
    {"tpot_p99_ms", "ms", false},
    {"itl_mean_ms", "ms", false},
    {"itl_median_ms", "ms", false},
    {"itl_p99_ms", "ms", false},
    {"e2el_mean_ms", "ms", false},
    {"e2el_median_ms", "ms", false},
    {"e2el_p99_ms", "ms", false},
}};

// A case prepared for resampling. Each request gets a share of the run's
// duration proportional to its own time (E2EL): throughput = completed / sum of
// shares. A closed-loop run's duration is one client's sequence of requests,
// about n / C of them (C = mean requests in flight = sum E2EL / duration), so
// its noise is that of n / C requests, not of n: a draw takes the duration from
// the first n / C drawn requests (picks are random, so a prefix is a smaller
// resample), scaled to n, and the completions from all n. Resampling the
// duration from all n would understate its noise about sqrt(C) times; the unit
// tests measure the spread across seeds against the CI.
struct PreparedCase {
  const ServingCase* c = nullptr;
  std::vector<double> share_s;
  size_t duration_units = 0;  // n / C
};

PreparedCase prepare(const ServingCase& c, size_t min_units) {
  const size_t n = c.requests.size();
  PreparedCase p{&c, std::vector<double>(n, 0.0), n};
  if (n == 0 || !(c.duration_s > 0)) return p;
  double total = 0;
  for (const auto& r : c.requests) total += std::max(0.0, r.e2el_s);
  for (size_t i = 0; i < n; ++i)
    p.share_s[i] = total > 0 ? std::max(0.0, c.requests[i].e2el_s) / total * c.duration_s
                             : c.duration_s / static_cast<double>(n);
  const double in_flight = std::max(1.0, total / c.duration_s);
  p.duration_units =
      std::clamp<size_t>(static_cast<size_t>(std::lround(static_cast<double>(n) / in_flight)),
                         std::min(min_units, n), n);
  return p;
}

// mean, median, p99 in ms of `v` (reordered); zeros when empty, as vLLM reports.
void put_stats(std::vector<double>& v, double* out) {
  if (v.empty()) {
    out[0] = out[1] = out[2] = 0;
    return;
  }
  out[0] = stats::mean(v) * 1000;
  out[1] = stats::percentile_select(v, 50) * 1000;
  out[2] = stats::percentile_select(v, 99) * 1000;
}

stats::StatisticSide serving_side(const PreparedCase& p) {
  struct Buffers {
    std::vector<double> ttft, tpot, itl, e2el;
  };
  auto buf = std::make_shared<Buffers>();
  return {p.c->requests.size(),
          [p, buf](std::span<const size_t> picks, bool resampled, std::span<double> out) {
            auto& b = *buf;
            b.ttft.clear();
            b.tpot.clear();
            b.itl.clear();
            b.e2el.clear();
            // Completions count over every drawn request; the duration over the first n / C of
            // them, scaled to n (see PreparedCase).
            const size_t duration_units = resampled ? p.duration_units : picks.size();
            double duration = 0, completed = 0, tokens = 0;
            for (size_t k = 0; k < picks.size(); ++k) {
              const size_t i = picks[k];
              const auto& r = p.c->requests[i];
              // vLLM: usage.completion_tokens, else 1.
              const int64_t n = r.output_tokens > 0 ? r.output_tokens : 1;
              if (k < duration_units) duration += p.share_s[i];
              completed += r.success ? 1 : 0;
              tokens += r.success ? static_cast<double>(n) : 0;
              if (!r.success) continue;
              b.ttft.push_back(r.ttft_s);
              b.e2el.push_back(r.e2el_s);
              if (n > 1) b.tpot.push_back((r.e2el_s - r.ttft_s) / static_cast<double>(n - 1));
              b.itl.insert(b.itl.end(), r.itl_s.begin(), r.itl_s.end());
            }
            if (duration_units > 0)
              duration *= static_cast<double>(picks.size()) / static_cast<double>(duration_units);
            out[0] = duration > 0 ? completed / duration : 0;
            out[1] = duration > 0 ? tokens / duration : 0;
            put_stats(b.ttft, &out[2]);
            put_stats(b.tpot, &out[5]);
            put_stats(b.itl, &out[8]);
            put_stats(b.e2el, &out[11]);
          }};
}

// Values behind each metric's statistic (for the tail rule below).
struct ValueCounts {
  size_t requests = 0, tpot = 0, itl = 0;
};

ValueCounts count_values(const ServingCase& c) {
  ValueCounts n;
  for (const auto& r : c.requests) {
    if (!r.success) continue;
    ++n.requests;
    n.tpot += r.output_tokens > 1 ? 1 : 0;
    n.itl += r.itl_s.size();
  }
  return n;
}

// A bootstrap of a tail percentile is only as good as the values beyond it:
// with fewer than this many behind the statistic, p99 is the sample's top one
// or two values and its CI undercovers.
constexpr size_t kMinValuesForP99 = 200;

double delta_pct(double baseline, double candidate) {
  return baseline != 0 ? (candidate - baseline) / baseline * 100 : 0;
}

// --- Kernels ----------------------------------------------------------------

struct KernelEntry {
  std::optional<double> median_us;
  std::vector<double> round_medians_ns;
  std::string stored_verdict;
};

// kernel id → entry, in report order.
std::vector<std::pair<std::string, KernelEntry>> read_kernels(const fs::path& ws) {
  std::error_code ec;
  const bool is_compare = fs::is_regular_file(ws / "compare_report.json", ec);
  const fs::path path = ws / (is_compare ? "compare_report.json" : "analyze_report.json");
  json r;
  try {
    r = json::parse(read_file(path).view());
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("not valid JSON: {}", e.what()), path.string());
  }
  std::vector<std::pair<std::string, KernelEntry>> out;
  auto entry = [&](const std::string& id) -> KernelEntry& {
    for (auto& [k, v] : out)
      if (k == id) return v;
    return out.emplace_back(id, KernelEntry{}).second;
  };
  for (const auto& row : r.value("summary", json::array())) {
    std::string id = row.value("kernel_id", "");
    if (id.empty()) continue;
    auto& e = entry(id);
    if (row.contains("performance_summary") && row["performance_summary"].contains("median_us"))
      e.median_us = row["performance_summary"]["median_us"].get<double>();
  }
  const json* results = nullptr;
  if (r.contains("results") && r["results"].is_array()) results = &r["results"];
  if (r.contains("results") && r["results"].is_object() && r["results"].contains("kernel_results"))
    results = &r["results"]["kernel_results"];
  if (results) {
    for (const auto& k : *results) {
      std::string id = k.contains("extra") ? k["extra"].value("kernel_id", "") : "";
      if (id.empty()) continue;
      auto& e = entry(id);
      const auto& perf = k.value("performance_result", json::object());
      if (perf.contains("magpie_stats") && perf["magpie_stats"].contains("rounds"))
        for (const auto& round : perf["magpie_stats"]["rounds"])
          if (!round.value("probe", false) && round.contains("median_ns") &&
              round["median_ns"].is_number())
            e.round_medians_ns.push_back(round["median_ns"].get<double>());
    }
  }
  if (r.contains("results") && r["results"].is_object())
    for (const auto& v : r["results"].value("verdicts", json::array())) {
      std::string id = v.value("kernel_id", "");
      if (id.empty()) continue;
      auto& e = entry(id);
      if (v.value("role", "") == "baseline")
        e.stored_verdict = "BASELINE";
      else if (v.contains("verdict"))
        e.stored_verdict = v["verdict"].get<std::string>();
    }
  return out;
}

}  // namespace

std::vector<std::string> diff_labels(const std::vector<DiffInput>& inputs) {
  auto name = [](const fs::path& p, int depth) {
    fs::path n = p.lexically_normal();
    if (n.filename().empty()) n = n.parent_path();  // a trailing slash
    std::string out = n.filename().string();
    for (int i = 1; i < depth && n.has_parent_path() && n.parent_path() != n; ++i) {
      n = n.parent_path();
      out = n.filename().string() + "/" + out;
    }
    return out;
  };
  std::vector<std::string> labels;
  for (const auto& in : inputs)
    labels.push_back(in.label.empty() ? name(in.workspace, 1) : in.label);
  const auto first = labels;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!inputs[i].label.empty()) continue;
    if (std::count(first.begin(), first.end(), first[i]) > 1)
      labels[i] = name(fs::absolute(inputs[i].workspace), 2);
  }
  return labels;
}

WorkspaceKind diff_workspace_kind(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir / "benchmark_report.json", ec) ||
      fs::is_regular_file(dir / "requests.jsonl", ec) ||
      fs::is_regular_file(dir / "benchmark_serving_result.json", ec))
    return WorkspaceKind::kServing;
  if (fs::is_regular_file(dir / "compare_report.json", ec) ||
      fs::is_regular_file(dir / "analyze_report.json", ec))
    return WorkspaceKind::kKernels;
  return WorkspaceKind::kOther;
}

std::vector<MetricDiff> diff_serving_case(const ServingCase& baseline, const ServingCase& candidate,
                                          const stats::VerdictSettings& settings) {
  const PreparedCase pb = prepare(baseline, settings.min_samples),
                     pc = prepare(candidate, settings.min_samples);
  std::vector<stats::StatisticSpec> specs;
  for (const auto& m : kServingMetrics) specs.push_back({m.higher_is_better});
  auto est = stats::compare_statistics(serving_side(pb), serving_side(pc), specs, settings);
  std::vector<MetricDiff> out;
  for (size_t i = 0; i < kServingMetrics.size(); ++i) {
    const auto& spec = kServingMetrics[i];
    const auto& e = est[i];
    MetricDiff d{spec.name,  spec.unit,   spec.higher_is_better,
                 e.baseline, e.candidate, delta_pct(e.baseline, e.candidate),
                 e.ratio,    e.ci_low,    e.ci_high,
                 e.verdict,  e.reason};
    d.noise_ci_low = d.ci_low;
    d.noise_ci_high = d.ci_high;
    if (spec.higher_is_better && !(baseline.duration_s > 0 && candidate.duration_s > 0))
      d.reason = "the run's duration is unknown: no throughput";
    if (d.metric.ends_with("_p99_ms")) {
      auto values = [&](const ValueCounts& v) {
        return d.metric.starts_with("tpot")  ? v.tpot
               : d.metric.starts_with("itl") ? v.itl
                                             : v.requests;
      };
      size_t nb = values(count_values(baseline)), nc = values(count_values(candidate));
      if (std::min(nb, nc) < kMinValuesForP99 && d.verdict != Verdict::kAmbiguous) {
        d.verdict = Verdict::kAmbiguous;
        d.reason =
            fmt::format("p99 of {} and {} values rests on the top one or two: needs {} a side", nb,
                        nc, kMinValuesForP99);
      }
    }
    d.within_run_verdict = d.verdict;
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

// The fourteen statistics of one run, in kServingMetrics order.
std::vector<double> serving_point_values(const ServingCase& c, size_t min_units) {
  const PreparedCase p = prepare(c, min_units);
  std::vector<size_t> picks(c.requests.size());
  for (size_t i = 0; i < picks.size(); ++i) picks[i] = i;
  std::vector<double> out(kServingMetrics.size(), 0.0);
  serving_side(p).compute(picks, false, out);
  return out;
}

// Several runs of one config as one sample: their requests side by side, their durations added
// (each run's duration covers only its own requests).
ServingCase pooled(std::span<const ServingCase* const> runs) {
  ServingCase out = *runs[0];
  out.has_timeline = false;
  for (size_t i = 1; i < runs.size(); ++i) {
    out.requests.insert(out.requests.end(), runs[i]->requests.begin(), runs[i]->requests.end());
    out.duration_s += runs[i]->duration_s;
  }
  return out;
}

}  // namespace

std::vector<MetricDiff> diff_serving_runs(std::span<const ServingCase* const> baseline_runs,
                                          std::span<const ServingCase* const> candidate_runs,
                                          bool aa_pair, const DiffSettings& settings) {
  const auto& vs = settings.verdict;
  auto out = diff_serving_case(pooled(baseline_runs), pooled(candidate_runs), vs);
  std::vector<std::vector<double>> base_values, cand_values;  // [run][metric]
  for (const auto* r : baseline_runs) base_values.push_back(serving_point_values(*r, vs.min_samples));
  for (const auto* r : candidate_runs) cand_values.push_back(serving_point_values(*r, vs.min_samples));
  const bool repeats = baseline_runs.size() > 1 || candidate_runs.size() > 1;
  for (size_t m = 0; m < out.size(); ++m) {
    auto column = [&](const std::vector<std::vector<double>>& runs) {
      std::vector<double> v;
      for (const auto& r : runs) v.push_back(r[m]);
      return v;
    };
    stats::RunNoise noise;
    if (aa_pair) {
      auto all = column(base_values);
      auto c = column(cand_values);
      all.insert(all.end(), c.begin(), c.end());
      noise = {stats::NoiseBasis::kAaPair, stats::run_spread(all)};
    } else if (repeats) {
      noise = {stats::NoiseBasis::kRepeats, std::max(stats::run_spread(column(base_values)),
                                                     stats::run_spread(column(cand_values)))};
    } else if (settings.run_noise) {
      noise = {stats::NoiseBasis::kGiven, 1 + *settings.run_noise};
    }
    auto& d = out[m];
    auto v = stats::apply_run_noise(d.within_run_verdict, d.ci_low, d.ci_high, d.reason, noise,
                                    vs.threshold);
    d.verdict = v.verdict;
    d.reason = v.reason;
    d.noise_basis = noise.basis;
    d.run_noise_floor = noise.basis == stats::NoiseBasis::kWithinRunOnly ? 1 : noise.floor;
    d.noise_ci_low = v.ci_low;
    d.noise_ci_high = v.ci_high;
  }
  return out;
}

ReportDiff diff_reports(const std::vector<DiffInput>& inputs, const DiffSettings& settings) {
  if (inputs.size() < 2) {
    throw Error(ErrorKind::kUsage,
                fmt::format("a diff needs two or more workspaces, got {}", inputs.size()), "",
                std::nullopt,
                "pass a baseline and one or more candidates: magpie results diff A B [C...]");
  }
  ReportDiff d;
  d.settings = settings.verdict;
  const auto labels = diff_labels(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    std::error_code ec;
    if (!fs::is_directory(in.workspace, ec)) {
      throw Error(ErrorKind::kNotFound, "workspace not found (deleted or moved?)",
                  in.workspace.string(), std::nullopt,
                  "`magpie results list` shows which workspaces still exist");
    }
    for (const auto& r : in.repeats)
      if (!fs::is_directory(r, ec) || diff_workspace_kind(r) != diff_workspace_kind(in.workspace))
        throw Error(ErrorKind::kUsage,
                    "a repeat must be a workspace of the same kind as the run it repeats",
                    r.string(), std::nullopt,
                    "give repeats of one config joined by commas: magpie results diff A1,A2 B1,B2");
    d.inputs.push_back({labels[i], in.workspace, diff_workspace_kind(in.workspace), in.repeats});
  }
  const auto kind = d.inputs[0].kind;
  for (const auto& w : d.inputs) {
    if (w.kind != kind || w.kind == WorkspaceKind::kOther) {
      throw Error(
          ErrorKind::kUsage,
          "workspaces of different kinds (or with no serving or kernel report) cannot be diffed",
          w.workspace.string(), std::nullopt,
          "diff serving benchmarks with serving benchmarks (benchmark_report.json), kernel "
          "compares with "
          "kernel compares (compare_report.json); op tables: --ops");
    }
  }
  if (kind == WorkspaceKind::kServing) {
    // Each side: its workspace and its repeats, every one's cases.
    auto load_side = [&](size_t i) {
      std::vector<std::vector<ServingCase>> runs{load_serving_cases(d.inputs[i].workspace)};
      for (const auto& r : d.inputs[i].repeats) runs.push_back(load_serving_cases(r));
      return runs;
    };
    // The case of `runs[k]` matching `label` (a single-case run matches any single case).
    auto find_case = [](const std::vector<ServingCase>& cases, const std::string& label,
                        bool single) -> const ServingCase* {
      for (const auto& c : cases)
        if (c.label == label) return &c;
      return single && cases.size() == 1 ? &cases[0] : nullptr;
    };
    const auto base_runs = load_side(0);
    const auto& base_cases = base_runs[0];
    for (size_t i = 1; i < d.inputs.size(); ++i) {
      const auto cand_runs = load_side(i);
      const bool aa_pair =
          !inputs[0].config_key.empty() && inputs[0].config_key == inputs[i].config_key;
      if (aa_pair)
        d.warnings.push_back(fmt::format(
            "{} and {} are runs of one config (an A/A pair): their difference is the "
            "run-to-run noise",
            d.inputs[0].label, d.inputs[i].label));
      for (const auto& bc : base_cases) {
        const bool single = base_cases.size() == 1;
        std::vector<const ServingCase*> b, c;
        for (const auto& run : base_runs)
          if (const auto* x = find_case(run, bc.label, single)) b.push_back(x);
        for (const auto& run : cand_runs)
          if (const auto* x = find_case(run, bc.label, single && run.size() == 1)) c.push_back(x);
        if (c.empty()) {
          d.warnings.push_back(fmt::format("case '{}' of {} has no match in {}", bc.label,
                                           d.inputs[0].label, d.inputs[i].label));
          continue;
        }
        ServingCaseDiff cd;
        cd.case_label = bc.label;
        cd.baseline_label = d.inputs[0].label;
        cd.candidate_label = d.inputs[i].label;
        for (const auto* x : b) cd.baseline_requests += x->requests.size();
        for (const auto* x : c) cd.candidate_requests += x->requests.size();
        cd.baseline_runs = b.size();
        cd.candidate_runs = c.size();
        cd.metrics = diff_serving_runs(b, c, aa_pair, settings);
        d.serving.push_back(std::move(cd));
      }
      bool faster = false;
      for (const auto& cd : d.serving)
        if (cd.candidate_label == d.inputs[i].label)
          for (const auto& m : cd.metrics) faster = faster || m.verdict == stats::Verdict::kFaster;
      for (auto& q : compare_quality_gates(d.inputs[0].workspace, d.inputs[i].workspace, d.warnings,
                                           settings.verdict.confidence))
        d.quality.push_back({d.inputs[0].label, d.inputs[i].label, std::move(q), faster});
    }
    return d;
  }
  // Kernels.
  d.settings = settings.kernel_verdict;
  auto base = read_kernels(d.inputs[0].workspace);
  for (size_t i = 1; i < d.inputs.size(); ++i) {
    auto cand = read_kernels(d.inputs[i].workspace);
    for (const auto& [id, be] : base) {
      auto it =
          std::find_if(cand.begin(), cand.end(), [&](const auto& p) { return p.first == id; });
      if (it == cand.end()) {
        d.warnings.push_back(fmt::format("kernel '{}' of {} is not in {}", id, d.inputs[0].label,
                                         d.inputs[i].label));
        continue;
      }
      const auto& ce = it->second;
      KernelDiff k;
      k.kernel_id = id;
      k.baseline_label = d.inputs[0].label;
      k.candidate_label = d.inputs[i].label;
      k.baseline_median_us = be.median_us;
      k.candidate_median_us = ce.median_us;
      if (be.median_us && ce.median_us) k.delta_pct = delta_pct(*be.median_us, *ce.median_us);
      auto e = stats::compare_samples(be.round_medians_ns, ce.round_medians_ns, d.settings);
      k.ratio = e.speedup;
      k.ci_low = e.ci_low;
      k.ci_high = e.ci_high;
      k.verdict = e.verdict;
      k.reason = be.round_medians_ns.empty() || ce.round_medians_ns.empty()
                     ? "no per-round medians in the report: no cross-run CI"
                     : e.reason;
      if (k.ratio == 0 && be.median_us && ce.median_us && *ce.median_us > 0)
        k.ratio = k.ci_low = k.ci_high = *be.median_us / *ce.median_us;
      k.stored_verdict = ce.stored_verdict;
      d.kernels.push_back(std::move(k));
    }
  }
  return d;
}

}  // namespace magpie::store
