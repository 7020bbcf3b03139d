#include "store/report_diff_writers.hpp"

#include <fmt/format.h>

#include "report/csv_writer.hpp"
#include "report/text_table.hpp"

namespace magpie::store {

using nlohmann::json;
using report::fixed;

namespace {

std::string number(double v) {
  double a = std::abs(v);
  return fixed(v, a >= 100 ? 1 : a >= 1 ? 2 : 4);
}

std::string signed_pct(double v) { return fmt::format("{:+.1f}%", v); }

std::string opt_number(const std::optional<double>& v) { return v ? number(*v) : ""; }

std::string ci_text(double lo, double hi) { return fmt::format("[{:.3f}, {:.3f}]", lo, hi); }

std::string rule_text(const ReportDiff& d) {
  std::string text = fmt::format(
      "verdict: {:.0f}% bootstrap CI of the ratio (>1 = candidate better), {} resamples, seed {}; "
      "SAME inside ±{:.1f}%, FASTER/SLOWER beyond it, else AMBIGUOUS",
      d.settings.confidence * 100, d.settings.resamples, d.settings.seed,
      d.settings.threshold * 100);
  if (!d.serving.empty())
    text +=
        "\nbetween runs: the CI widened by the run-to-run noise (Noise: the largest ratio between "
        "two runs of one config) before the verdict; with one run a side that noise is unknown "
        "and FASTER/SLOWER are reported as AMBIGUOUS (unconfirmed): repeat each side "
        "(diff A1,A2 B1,B2) or give --run-noise";
  return text;
}

std::string noise_cell(const MetricDiff& m) {
  return m.noise_basis == stats::NoiseBasis::kWithinRunOnly ? "unmeasured"
                                                            : fmt::format("x{:.3f}", m.run_noise_floor);
}

// The within-run verdict when the run-to-run rule changed it ("FASTER?" = FASTER within runs only).
std::string verdict_cell(const MetricDiff& m) {
  std::string v = stats::to_string(m.verdict);
  if (m.verdict != m.within_run_verdict)
    v += fmt::format(" ({} within run)", stats::to_string(m.within_run_verdict));
  return v;
}

}  // namespace

std::optional<DiffFormat> diff_format_from_string(std::string_view text) {
  if (text == "table") return DiffFormat::kTable;
  if (text == "csv") return DiffFormat::kCsv;
  if (text == "json") return DiffFormat::kJson;
  return std::nullopt;
}

std::string diff_table(const ReportDiff& d) {
  std::string out;
  auto repeats = [](const DiffWorkspace& w) {
    std::string r;
    for (const auto& p : w.repeats) r += ", repeat " + p.string();
    return r;
  };
  out += fmt::format("Baseline: {} ({}{})\n", d.inputs[0].label, d.inputs[0].workspace.string(),
                     repeats(d.inputs[0]));
  for (size_t i = 1; i < d.inputs.size(); ++i)
    out += fmt::format("Candidate: {} ({}{})\n", d.inputs[i].label,
                       d.inputs[i].workspace.string(), repeats(d.inputs[i]));
  for (const auto& c : d.serving) {
    out += fmt::format("\n{} vs {}{} ({} vs {} requests, {} vs {} run{})\n", c.candidate_label,
                       c.baseline_label, c.case_label.empty() ? "" : ", case " + c.case_label,
                       c.candidate_requests, c.baseline_requests, c.candidate_runs,
                       c.baseline_runs, c.candidate_runs + c.baseline_runs > 2 ? "s" : "");
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : c.metrics)
      rows.push_back({m.metric, m.unit, number(m.baseline), number(m.candidate),
                      signed_pct(m.delta_pct), fixed(m.ratio, 3), ci_text(m.ci_low, m.ci_high),
                      noise_cell(m), verdict_cell(m)});
    out += report::render_text_table({{"Metric"},
                                      {"Unit"},
                                      {"Baseline", true},
                                      {"Candidate", true},
                                      {"Delta", true},
                                      {"Ratio", true},
                                      {"CI", true},
                                      {"Noise", true},
                                      {"Verdict"}},
                                     rows);
  }
  if (!d.kernels.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& k : d.kernels)
      rows.push_back({k.kernel_id, k.candidate_label, opt_number(k.baseline_median_us),
                      opt_number(k.candidate_median_us), signed_pct(k.delta_pct), fixed(k.ratio, 3),
                      ci_text(k.ci_low, k.ci_high), stats::to_string(k.verdict), k.stored_verdict});
    out += "\n";
    out += report::render_text_table({{"Kernel", false, 40},
                                      {"Candidate", false, 30},
                                      {"Base median us", true},
                                      {"Cand median us", true},
                                      {"Delta", true},
                                      {"Speedup", true},
                                      {"CI", true},
                                      {"Verdict"},
                                      {"Stored verdict"}},
                                     rows);
  }
  if (!d.quality.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& q : d.quality) {
      const auto& p = q.comparison.paired;
      rows.push_back({q.comparison.task, q.comparison.metric, q.candidate_label, std::to_string(p.counts.pairs()),
                      fmt::format("{:.3f}", p.baseline_accuracy), fmt::format("{:.3f}", p.candidate_accuracy),
                      fmt::format("{:+.3f}", p.difference), ci_text(p.ci_low, p.ci_high),
                      fmt::format("{}/{}", p.counts.baseline_only, p.counts.candidate_only),
                      fmt::format("{:.3g}", p.p_value), stats::to_string(p.verdict)});
    }
    out += "\nquality (items paired by doc_id; exact McNemar test):\n";
    out += report::render_text_table({{"Task"},
                                      {"Metric"},
                                      {"Candidate"},
                                      {"Items", true},
                                      {"Baseline acc", true},
                                      {"Candidate acc", true},
                                      {"Difference", true},
                                      {"CI", true},
                                      {"Lost/gained", true},
                                      {"p", true},
                                      {"Verdict"}},
                                     rows);
    for (const auto& q : d.quality)
      if (q.comparison.paired.verdict == stats::QualityVerdict::kWorse)
        out += fmt::format("{}: quality WORSE on {} ({:+.1f} points){}\n", q.candidate_label, q.comparison.task,
                           q.comparison.paired.difference * 100,
                           q.candidate_faster ? ": faster, but its answers got worse; not a win" : "");
  }
  out += "\n" + rule_text(d) + "\n";
  for (const auto& w : d.warnings) out += "warning: " + w + "\n";
  return out;
}

std::string diff_csv(const ReportDiff& d) {
  report::CsvWriter csv;
  if (!d.serving.empty()) {
    csv.row({"case", "baseline", "candidate", "metric", "unit", "higher_is_better",
             "baseline_value", "candidate_value", "delta_pct", "ratio", "ci_low", "ci_high",
             "verdict", "reason", "within_run_verdict", "noise_basis", "run_noise_floor",
             "noise_ci_low", "noise_ci_high", "baseline_runs", "candidate_runs"});
    for (const auto& c : d.serving)
      for (const auto& m : c.metrics)
        csv.row({c.case_label, c.baseline_label, c.candidate_label, m.metric, m.unit,
                 m.higher_is_better ? "true" : "false", fmt::format("{}", m.baseline),
                 fmt::format("{}", m.candidate), fixed(m.delta_pct, 3), fixed(m.ratio, 5),
                 fixed(m.ci_low, 5), fixed(m.ci_high, 5), stats::to_string(m.verdict), m.reason,
                 stats::to_string(m.within_run_verdict), stats::to_string(m.noise_basis),
                 fixed(m.run_noise_floor, 5), fixed(m.noise_ci_low, 5), fixed(m.noise_ci_high, 5),
                 std::to_string(c.baseline_runs), std::to_string(c.candidate_runs)});
  } else {
    csv.row({"kernel_id", "baseline", "candidate", "baseline_median_us", "candidate_median_us",
             "delta_pct", "speedup", "ci_low", "ci_high", "verdict", "reason", "stored_verdict"});
    for (const auto& k : d.kernels)
      csv.row({k.kernel_id, k.baseline_label, k.candidate_label,
               k.baseline_median_us ? fmt::format("{}", *k.baseline_median_us) : "",
               k.candidate_median_us ? fmt::format("{}", *k.candidate_median_us) : "",
               fixed(k.delta_pct, 3), fixed(k.ratio, 5), fixed(k.ci_low, 5), fixed(k.ci_high, 5),
               stats::to_string(k.verdict), k.reason, k.stored_verdict});
  }
  return csv.str();
}

namespace {

json quality_json(const ReportDiff& d) {
  json out = json::array();
  for (const auto& q : d.quality) {
    const auto& c = q.comparison;
    const auto& p = c.paired;
    out.push_back({{"task", c.task},
                   {"metric", c.metric},
                   {"filter", c.filter},
                   {"baseline", q.baseline_label},
                   {"candidate", q.candidate_label},
                   {"baseline_samples", c.baseline_file.string()},
                   {"candidate_samples", c.candidate_file.string()},
                   {"items", p.counts.pairs()},
                   {"both_right", p.counts.both_right},
                   {"both_wrong", p.counts.both_wrong},
                   {"baseline_only_right", p.counts.baseline_only},
                   {"candidate_only_right", p.counts.candidate_only},
                   {"baseline_accuracy", p.baseline_accuracy},
                   {"candidate_accuracy", p.candidate_accuracy},
                   {"difference", p.difference},
                   {"ci_low", p.ci_low},
                   {"ci_high", p.ci_high},
                   {"confidence", p.confidence},
                   {"p_value", p.p_value},
                   {"test", "exact McNemar (two-sided binomial on the discordant pairs); CI: Clopper-Pearson of "
                            "the discordant split, scaled to the accuracy difference"},
                   {"verdict", stats::to_string(p.verdict)},
                   {"reason", p.reason},
                   {"candidate_faster", q.candidate_faster},
                   {"unpaired_baseline", c.only_in_baseline.size()},
                   {"unpaired_candidate", c.only_in_candidate.size()}});
  }
  return out;
}

}  // namespace

json diff_json(const ReportDiff& d) {
  json inputs = json::array();
  for (size_t i = 0; i < d.inputs.size(); ++i) {
    json repeats = json::array();
    for (const auto& r : d.inputs[i].repeats) repeats.push_back(r.string());
    inputs.push_back({{"label", d.inputs[i].label},
                      {"workspace", d.inputs[i].workspace.string()},
                      {"repeats", repeats},
                      {"role", i == 0 ? "baseline" : "candidate"},
                      {"kind", d.inputs[i].kind == WorkspaceKind::kServing   ? "serving"
                               : d.inputs[i].kind == WorkspaceKind::kKernels ? "kernels"
                                                                             : "other"}});
  }
  json serving = json::array();
  for (const auto& c : d.serving) {
    json metrics = json::array();
    for (const auto& m : c.metrics)
      metrics.push_back({{"metric", m.metric},
                         {"unit", m.unit},
                         {"higher_is_better", m.higher_is_better},
                         {"baseline", m.baseline},
                         {"candidate", m.candidate},
                         {"delta_pct", m.delta_pct},
                         {"ratio", m.ratio},
                         {"ci_low", m.ci_low},
                         {"ci_high", m.ci_high},
                         {"verdict", stats::to_string(m.verdict)},
                         {"reason", m.reason},
                         {"within_run_verdict", stats::to_string(m.within_run_verdict)},
                         {"noise_basis", stats::to_string(m.noise_basis)},
                         {"run_noise_floor", m.run_noise_floor},
                         {"noise_ci_low", m.noise_ci_low},
                         {"noise_ci_high", m.noise_ci_high}});
    serving.push_back({{"case", c.case_label},
                       {"baseline", c.baseline_label},
                       {"candidate", c.candidate_label},
                       {"baseline_requests", c.baseline_requests},
                       {"candidate_requests", c.candidate_requests},
                       {"baseline_runs", c.baseline_runs},
                       {"candidate_runs", c.candidate_runs},
                       {"metrics", metrics}});
  }
  json kernels = json::array();
  for (const auto& k : d.kernels)
    kernels.push_back(
        {{"kernel_id", k.kernel_id},
         {"baseline", k.baseline_label},
         {"candidate", k.candidate_label},
         {"baseline_median_us", k.baseline_median_us ? json(*k.baseline_median_us) : json(nullptr)},
         {"candidate_median_us",
          k.candidate_median_us ? json(*k.candidate_median_us) : json(nullptr)},
         {"delta_pct", k.delta_pct},
         {"speedup", k.ratio},
         {"ci_low", k.ci_low},
         {"ci_high", k.ci_high},
         {"verdict", stats::to_string(k.verdict)},
         {"reason", k.reason},
         {"stored_verdict", k.stored_verdict.empty() ? json(nullptr) : json(k.stored_verdict)}});
  return {{"inputs", inputs},
          {"verdict_rule",
           {{"threshold", d.settings.threshold},
            {"confidence", d.settings.confidence},
            {"bootstrap_resamples", d.settings.resamples},
            {"seed", d.settings.seed},
            {"min_samples", d.settings.min_samples},
            {"ratio", "oriented: > 1 means the candidate is better"},
            {"run_noise",
             "serving: the CI widened to [ci_low/F, ci_high*F], F = the largest ratio between two "
             "runs of one config (repeats, an A/A pair, or --run-noise); with one run a side "
             "FASTER/SLOWER become AMBIGUOUS (unconfirmed)"},
            {"bootstrap", d.serving.empty()
                              ? "per-round medians of each kernel"
                              : "requests resampled with replacement; throughput over the drawn "
                                "requests' E2EL-proportional shares of the duration"}}},
          {"serving", serving},
          {"kernels", kernels},
          {"quality", quality_json(d)},
          {"warnings", d.warnings}};
}

std::string write_diff(const ReportDiff& d, DiffFormat format) {
  switch (format) {
    case DiffFormat::kTable:
      return diff_table(d);
    case DiffFormat::kCsv:
      return diff_csv(d);
    case DiffFormat::kJson:
      return diff_json(d).dump(2) + "\n";
  }
  return diff_table(d);
}

}  // namespace magpie::store
