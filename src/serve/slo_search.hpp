#pragma once
// The SLO search (`--search request_rate|concurrency`, client.search): the
// highest request rate (or concurrency) whose runs meet the --slo terms.
//
// Bracketing, then bisection. From the range's low end the value doubles
// (capped at the high end) until a probe fails; then the gap between the
// highest passing and the lowest failing value is halved until it is at most
// `step`. Each probe is `repeats` runs; a term's value is the median over the
// runs, and its verdict is results diff's noise rule (core/run_noise.hpp) on
// the ratio limit/value: widened by the run-to-run spread of the runs (at
// least 1 + `noise`), it is clearly above 1 (pass), clearly below (fail), or
// straddles 1: within noise. A probe within noise gets another run, up to
// `max_repeats`; still within noise, it is marked uncertain and counts as
// failing, so the knee's passing value passed beyond noise.
//
// The budget (max_probes values, max_time_s) always ends the search; a search
// stopped early (budget, Ctrl-C, the run's timeout, an error) keeps every probe
// measured and reports the bracket it reached.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "serve/slo.hpp"

namespace magpie::serve {

enum class SearchVariable { kRequestRate, kConcurrency };
const char* to_string(SearchVariable v);  // "request_rate" | "concurrency"

struct SloSearchSettings {
  SearchVariable variable = SearchVariable::kRequestRate;
  double min = 0, max = 0;  // the range searched (concurrency: whole numbers)
  double step = 0;          // the knee's resolution; 0 = min (rate) or 1 (concurrency)
  int64_t repeats = 2;      // runs per probe
  int64_t max_repeats = 4;  // a probe within noise gets more runs, up to this
  double noise = 0.05;      // least run-to-run noise assumed: F >= 1 + noise
  int64_t max_probes = 12;  // distinct values probed
  double max_time_s = 0;    // no new probe after this long; 0 = none (the run's timeout still applies)
  double resolved_step() const;
};

// Throws Error(kUsage) naming `where` (--search-range, client.search.max, ...)
// for a range that cannot be searched: min <= 0, max < min, a fractional
// concurrency, a step or budget out of range.
void check_search(const SloSearchSettings& s, const std::string& where);

// One run of a probe, as the runner measured it.
struct SearchRun {
  std::string case_label;  // the report's case (and its folder under cases/)
  SloResult slo;
  double request_throughput = 0, request_goodput = 0;
  int64_t completed = 0, failed = 0;
};

enum class ProbeVerdict { kPass, kFail, kUncertain };
const char* to_string(ProbeVerdict v);  // "pass" | "fail" | "uncertain"

struct SearchTermResult {
  SloTerm term;
  std::vector<double> values_ms;  // per run
  double value_ms = 0;            // median over the runs
  double noise_floor = 1;         // F
  ProbeVerdict verdict = ProbeVerdict::kUncertain;
  std::string reason;
};

struct SearchProbe {
  double value = 0;  // the rate (req/s) or concurrency probed
  std::vector<SearchRun> runs;
  std::vector<SearchTermResult> terms;
  double request_throughput = 0, request_goodput = 0;  // medians over the runs
  ProbeVerdict verdict = ProbeVerdict::kUncertain;
};

enum class SearchStatus {
  kFound,        // a passing and a failing value at most `step` apart
  kAllPass,      // the range's high end passes: the knee is above it
  kNonePass,     // the range's low end fails: no value in the range meets the SLOs
  kBudget,       // max_probes or max_time_s ended it; the bracket so far
  kInterrupted,  // a run was cut short (Ctrl-C, timeout, the server died)
  kError,        // a run threw (a dataset that no longer reads, a log that cannot be written)
};
const char* to_string(SearchStatus s);

struct SloSearchResult {
  SloSearchSettings settings;
  std::vector<SearchProbe> probes;  // in the order probed
  SearchStatus status = SearchStatus::kInterrupted;
  std::optional<double> highest_pass, lowest_fail;  // the knee
  double elapsed_s = 0;
  std::string error;  // kError: what the run threw
};

// A probe's verdict from its runs (the noise rule above); pure, for tests.
void judge_probe(SearchProbe& probe, const SloSearchSettings& s);

struct SearchHooks {
  // One run at `value`; nullopt when the run was cut short (nothing more is probed).
  std::function<std::optional<SearchRun>(double value, int64_t run_index)> measure;
  std::function<double()> now_s;                    // a clock, for max_time_s
  std::function<void(const std::string&)> on_line;  // progress lines
};

SloSearchResult run_slo_search(const SloSearchSettings& s, const SearchHooks& hooks);
// The same, filling `out` as it goes: when `measure` throws, `out` keeps the
// probes measured so far (a probe's finished runs too), status kError and the
// error's text, and the exception goes on to the caller.
void run_slo_search(const SloSearchSettings& s, const SearchHooks& hooks, SloSearchResult& out);

// "request rate 4 req/s" / "concurrency 3".
std::string describe_value(SearchVariable v, double value);
// The knee in one line: "knee: request rate 4 req/s passes, request rate 5 req/s fails (step 1)".
std::string knee_line(const SloSearchResult& r);
// "ttft_p99<=2s,tpot_p50<=50ms".
std::string slo_text(const std::vector<SloTerm>& terms);

}  // namespace magpie::serve
