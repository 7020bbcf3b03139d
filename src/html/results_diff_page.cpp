#include <fmt/format.h>

#include "html/charts.hpp"
#include "html/html_reports.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

namespace {

// A ratio (> 1 = candidate better) as an improvement in percent.
IntervalRow improvement(std::string label, double ratio, double lo, double hi, stats::Verdict v) {
  return {std::move(label), (ratio - 1) * 100, (lo - 1) * 100, (hi - 1) * 100, stats::to_string(v)};
}

}  // namespace

Page results_diff_page(const store::ReportDiff& diff) {
  Page page;
  page.kind = "results_diff";
  page.title = "Results diff";
  for (size_t i = 0; i < diff.inputs.size(); ++i)
    page.facts.emplace_back(
        i == 0 ? "baseline" : fmt::format("candidate {}", i),
        fmt::format("{} ({})", diff.inputs[i].label, diff.inputs[i].workspace.string()));
  page.facts.emplace_back("practical-equivalence band",
                          fmt::format("±{:.1f}%", 100 * diff.settings.threshold));
  page.facts.emplace_back("confidence", fmt::format("{:.0f}%", 100 * diff.settings.confidence));
  page.warnings = diff.warnings;
  const std::string caption =
      "Improvement of the candidate over the baseline, oriented so that > 0 is better (faster or "
      "more "
      "throughput), with the bootstrap CI; colour is the verdict.";

  for (const auto& c : diff.serving) {
    const bool measured = !c.metrics.empty() &&
                          c.metrics[0].noise_basis != stats::NoiseBasis::kWithinRunOnly;
    Section s{fmt::format("{} vs {}{}", c.candidate_label, c.baseline_label,
                          c.case_label.empty() ? "" : " — case " + c.case_label),
              fmt::format("{} baseline requests in {} run(s), {} candidate requests in {} run(s). "
                          "{}",
                          c.baseline_requests, c.baseline_runs, c.candidate_requests,
                          c.candidate_runs,
                          measured ? "Run-to-run noise measured: each CI is widened by it before "
                                     "the verdict."
                                   : "One run a side: run-to-run noise is not measured, so "
                                     "FASTER/SLOWER are unconfirmed (AMBIGUOUS); re-run each "
                                     "side to measure it."),
              {},
              {}};
    std::vector<IntervalRow> rows;
    Table t{{"metric", "unit", "baseline", "candidate", "change %", "ratio (>1 better)",
             "CI (within runs)", "run-to-run noise", "CI (between runs)", "verdict",
             "within-run verdict", "reason"},
            {}};
    for (const auto& m : c.metrics) {
      rows.push_back(improvement(m.metric, m.ratio, m.noise_ci_low, m.noise_ci_high, m.verdict));
      const bool known = m.noise_basis != stats::NoiseBasis::kWithinRunOnly;
      t.rows.push_back(
          {m.metric, m.unit, format_number(m.baseline), format_number(m.candidate),
           format_number(m.delta_pct), format_number(m.ratio),
           fmt::format("[{}, {}]", format_number(m.ci_low), format_number(m.ci_high)),
           known ? fmt::format("×{} ({})", format_number(m.run_noise_floor),
                               stats::to_string(m.noise_basis))
                 : "not measured",
           known ? fmt::format("[{}, {}]", format_number(m.noise_ci_low),
                               format_number(m.noise_ci_high))
                 : "",
           stats::to_string(m.verdict), stats::to_string(m.within_run_verdict), m.reason});
    }
    s.charts.push_back(interval_chart(
        "Per-metric change with confidence interval",
        caption + (measured ? " The interval is the CI widened by the run-to-run noise."
                            : " The interval covers requests within the runs only."),
        rows, "improvement (%)", 0.0));
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }

  if (!diff.kernels.empty()) {
    Section s{
        "Kernels", "Cross-run ratio of median times (bootstrap over per-round medians).", {}, {}};
    std::vector<IntervalRow> rows;
    Table t{{"kernel", "baseline", "candidate", "baseline median (µs)", "candidate median (µs)",
             "change %", "ratio", "CI", "verdict", "stored verdict"},
            {}};
    for (const auto& k : diff.kernels) {
      rows.push_back(improvement(fmt::format("{} ({})", k.kernel_id, k.candidate_label), k.ratio,
                                 k.ci_low, k.ci_high, k.verdict));
      t.rows.push_back({k.kernel_id, k.baseline_label, k.candidate_label,
                        k.baseline_median_us ? format_number(*k.baseline_median_us) : "",
                        k.candidate_median_us ? format_number(*k.candidate_median_us) : "",
                        format_number(k.delta_pct), format_number(k.ratio),
                        fmt::format("[{}, {}]", format_number(k.ci_low), format_number(k.ci_high)),
                        stats::to_string(k.verdict), k.stored_verdict});
    }
    s.charts.push_back(interval_chart("Per-kernel change with confidence interval", caption, rows,
                                      "improvement (%)", 0.0));
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
  if (!diff.quality.empty()) {
    Section s{"Quality (accuracy gate)",
              "Each task's items paired by doc_id between the two runs' lm-eval samples; exact McNemar "
              "test on the items only one run got right. WORSE/BETTER: the whole CI of the accuracy "
              "difference is below/above 0.",
              {},
              {}};
    Table t{{"task", "metric", "baseline", "candidate", "items", "baseline accuracy", "candidate accuracy",
             "difference", "CI", "lost / gained", "p", "verdict", "note"},
            {}};
    for (const auto& q : diff.quality) {
      const auto& p = q.comparison.paired;
      const bool worse = p.verdict == stats::QualityVerdict::kWorse;
      t.rows.push_back({q.comparison.task, q.comparison.metric, q.baseline_label, q.candidate_label,
                        std::to_string(p.counts.pairs()), format_number(p.baseline_accuracy),
                        format_number(p.candidate_accuracy), format_number(p.difference),
                        fmt::format("[{}, {}]", format_number(p.ci_low), format_number(p.ci_high)),
                        fmt::format("{} / {}", p.counts.baseline_only, p.counts.candidate_only),
                        fmt::format("{:.3g}", p.p_value), stats::to_string(p.verdict),
                        worse && q.candidate_faster ? "faster, but its answers got worse: not a win" : ""});
    }
    s.tables.push_back(std::move(t));
    page.sections.push_back(std::move(s));
  }
  if (diff.serving.empty() && diff.kernels.empty())
    page.sections.push_back(
        {"Nothing to compare", "The inputs hold no serving or kernel metrics.", {}, {}});
  return page;
}

}  // namespace magpie::html
