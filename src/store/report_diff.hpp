#pragma once
// Report diff: two or more workspaces compared metric by metric against the
// first (the baseline), each difference with a bootstrap CI and a verdict
// (core/verdict.hpp's band rule: FASTER / SLOWER / SAME / AMBIGUOUS).
//
// Serving benchmarks (benchmark_*): request and output token throughput, and
// TTFT, TPOT, ITL, E2EL mean, median and p99, recomputed from the per-request
// records (requests.jsonl) with vLLM's definitions. The bootstrap resamples
// requests, with replacement, and recomputes every statistic from the drawn
// requests (ITL pools the per-chunk gaps of the drawn requests: a cluster
// bootstrap). Throughput = completed requests (or output tokens) / duration.
// The run's duration is split over its requests in proportion to their E2EL (in
// a closed-loop run the duration is the total request time over the
// concurrency); a draw recomputes count / (the duration shares of the drawn
// requests), so slow, failed or long requests drawn more often move throughput
// as they would have moved the run. For a rate-limited (open-loop) run the
// throughput is set by the arrival rate and the CI reflects request-time noise. Cases of a sweep
// are matched by label.
//
// Kernel reports (compare_* / analyze_*): each kernel's median time in every
// workspace, a cross-run verdict from a bootstrap of the per-round medians
// (compare_report.json keeps no raw samples), and the verdict each compare run
// stored against its own baseline kernel.
//
// Writers (report_diff_writers.hpp) never recompute.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/verdict.hpp"

namespace magpie::store {

struct DiffInput {
  std::string label;  // empty: the workspace folder's name
  std::filesystem::path workspace;
};

struct DiffSettings {
  // Serving metrics are noisier than kernel timings: a 5% practical band.
  stats::VerdictSettings verdict{
      .threshold = 0.05, .resamples = 1000, .seed = 42, .confidence = 0.95, .min_samples = 5};
  // Kernel medians: compare's own defaults (±2%); min_samples counts rounds.
  stats::VerdictSettings kernel_verdict{};
};

struct MetricDiff {
  std::string metric;  // request_throughput, output_throughput, ttft_mean_ms, ... e2el_p99_ms
  std::string unit;    // req/s, tok/s, ms
  bool higher_is_better = false;
  double baseline = 0;
  double candidate = 0;
  double delta_pct = 0;  // (candidate - baseline) / baseline * 100; raw direction
  // Oriented: > 1 means the candidate is better (faster / more throughput).
  double ratio = 0, ci_low = 0, ci_high = 0;
  stats::Verdict verdict = stats::Verdict::kAmbiguous;
  std::string reason;
};

struct ServingCaseDiff {
  std::string case_label;  // "" for single-case runs
  std::string baseline_label, candidate_label;
  size_t baseline_requests = 0, candidate_requests = 0;  // measured, failures included
  std::vector<MetricDiff> metrics;
};

struct KernelDiff {
  std::string kernel_id;
  std::string baseline_label, candidate_label;
  std::optional<double> baseline_median_us, candidate_median_us;
  double delta_pct = 0;
  double ratio = 0, ci_low = 0,
         ci_high = 0;  // median(baseline)/median(candidate) over round medians
  stats::Verdict verdict = stats::Verdict::kAmbiguous;
  std::string reason;
  std::string
      stored_verdict;  // the candidate run's own verdict vs its baseline kernel ("" if none)
};

enum class WorkspaceKind { kServing, kKernels, kOther };

struct DiffWorkspace {
  std::string label;
  std::filesystem::path workspace;
  WorkspaceKind kind = WorkspaceKind::kOther;
};

struct ReportDiff {
  std::vector<DiffWorkspace> inputs;  // [0] is the baseline
  stats::VerdictSettings settings;
  std::vector<ServingCaseDiff> serving;
  std::vector<KernelDiff> kernels;
  std::vector<std::string> warnings;
};

// Throws Error(kUsage) for fewer than two inputs or workspaces of different
// kinds, kNotFound for a missing workspace or records.
ReportDiff diff_reports(const std::vector<DiffInput>& inputs, const DiffSettings& settings = {});

// Column labels: the given ones, else the workspace folder's name; names that
// repeat (two gap_analysis/ folders) take their parent's name too (run_a/gap_analysis).
std::vector<std::string> diff_labels(const std::vector<DiffInput>& inputs);

// What a folder holds for the diff: serving (benchmark_report.json or per-request
// records), kernels (compare_report.json / analyze_report.json), or other.
WorkspaceKind diff_workspace_kind(const std::filesystem::path& dir);

// --- Building blocks, exposed for tests --------------------------------------

struct ServingCase;
// The serving metric table of a candidate case against a baseline case.
std::vector<MetricDiff> diff_serving_case(const ServingCase& baseline, const ServingCase& candidate,
                                          const stats::VerdictSettings& settings);

}  // namespace magpie::store
