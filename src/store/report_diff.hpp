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
// Run-to-run noise (core/run_noise.hpp): a side may be several runs of one
// config (`repeats`); their requests are pooled for the bootstrap, and the
// largest ratio between two of them widens the CI before the verdict. With one
// run a side the verdict is within-run only, and FASTER/SLOWER are reported as
// AMBIGUOUS "unconfirmed" (serving diffs; kernel diffs are unchanged).
//
// Quality (serving): when both reports carry an accuracy gate (quality_gate with
// sample file receipts), each task's items are paired by doc_id and compared
// with the exact McNemar test: BETTER / SAME / WORSE with a CI on the accuracy
// difference (core/paired_accuracy.hpp). A candidate that is FASTER on some
// metric but WORSE in quality is flagged as such.
//
// Writers (report_diff_writers.hpp) never recompute.
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/run_noise.hpp"
#include "core/verdict.hpp"
#include "store/quality_samples.hpp"

namespace magpie::store {

struct DiffInput {
  std::string label;  // empty: the workspace folder's name
  std::filesystem::path workspace;
  // More runs of the same config as `workspace` (A1,A2): pooled with it, and
  // their spread is this side's run-to-run noise.
  std::vector<std::filesystem::path> repeats = {};
  // Runs known to be of one config: a candidate with the baseline's non-empty
  // key is an A/A pair (`results diff --aa`), its spread the noise floor.
  std::string config_key = {};
};

struct DiffSettings {
  // Serving metrics are noisier than kernel timings: a 5% practical band.
  stats::VerdictSettings verdict{
      .threshold = 0.05, .resamples = 1000, .seed = 42, .confidence = 0.95, .min_samples = 5};
  // Kernel medians: compare's own defaults (±2%); min_samples counts rounds.
  stats::VerdictSettings kernel_verdict{};
  // Run-to-run noise measured elsewhere (0.3: two runs of one config differ by
  // up to 30%), used when no side has repeats; unset: unknown.
  std::optional<double> run_noise;
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
  // The verdict between runs (core/run_noise.hpp); the bootstrap's own is within_run_verdict.
  stats::Verdict verdict = stats::Verdict::kAmbiguous;
  std::string reason;
  stats::Verdict within_run_verdict = stats::Verdict::kAmbiguous;
  stats::NoiseBasis noise_basis = stats::NoiseBasis::kWithinRunOnly;
  double run_noise_floor = 1;             // F: largest ratio between two runs of one config
  double noise_ci_low = 0, noise_ci_high = 0;  // [ci_low / F, ci_high * F]
};

struct ServingCaseDiff {
  std::string case_label;  // "" for single-case runs
  std::string baseline_label, candidate_label;
  size_t baseline_requests = 0, candidate_requests = 0;  // measured, failures included, all runs
  size_t baseline_runs = 1, candidate_runs = 1;
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

// Answers of a candidate against the baseline's, item by item (quality_samples.hpp).
struct QualityDiff {
  std::string baseline_label, candidate_label;
  QualityComparison comparison;
  bool candidate_faster = false;  // some throughput/latency verdict says FASTER: never a plain win if WORSE
};

enum class WorkspaceKind { kServing, kKernels, kOther };

struct DiffWorkspace {
  std::string label;
  std::filesystem::path workspace;
  WorkspaceKind kind = WorkspaceKind::kOther;
  std::vector<std::filesystem::path> repeats;
};

struct ReportDiff {
  std::vector<DiffWorkspace> inputs;  // [0] is the baseline
  stats::VerdictSettings settings;
  std::vector<ServingCaseDiff> serving;
  std::vector<KernelDiff> kernels;
  std::vector<QualityDiff> quality;  // serving runs whose reports both carry a quality_gate
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

// Repeated runs of one side: the cross-run diff. Requests of each side's runs
// are pooled for the bootstrap (durations add up); each metric's run-to-run
// floor is the largest spread of its per-run values within a side (within all
// runs for an A/A pair), else 1 + settings' run_noise, else unknown.
std::vector<MetricDiff> diff_serving_runs(std::span<const ServingCase* const> baseline_runs,
                                          std::span<const ServingCase* const> candidate_runs,
                                          bool aa_pair, const DiffSettings& settings);

}  // namespace magpie::store
