#include "serve/slo_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/run_noise.hpp"
#include "core/verdict.hpp"

namespace magpie::serve {

const char* to_string(SearchVariable v) {
  return v == SearchVariable::kConcurrency ? "concurrency" : "request_rate";
}

const char* to_string(ProbeVerdict v) {
  switch (v) {
    case ProbeVerdict::kPass:
      return "pass";
    case ProbeVerdict::kFail:
      return "fail";
    case ProbeVerdict::kUncertain:
      return "uncertain";
  }
  return "uncertain";
}

const char* to_string(SearchStatus s) {
  switch (s) {
    case SearchStatus::kFound:
      return "found";
    case SearchStatus::kAllPass:
      return "all_pass";
    case SearchStatus::kNonePass:
      return "none_pass";
    case SearchStatus::kBudget:
      return "budget";
    case SearchStatus::kInterrupted:
      return "interrupted";
    case SearchStatus::kError:
      return "error";
  }
  return "interrupted";
}

double SloSearchSettings::resolved_step() const {
  if (step > 0) return step;
  return variable == SearchVariable::kConcurrency ? 1.0 : min;
}

std::string describe_value(SearchVariable v, double value) {
  return v == SearchVariable::kConcurrency ? fmt::format("concurrency {:g}", value)
                                           : fmt::format("request rate {:g} req/s", value);
}

void check_search(const SloSearchSettings& s, const std::string& where) {
  auto bad = [&](const std::string& what, const std::string& fix) {
    return Error(ErrorKind::kUsage, fmt::format("{}: {}", where, what), "", std::nullopt, fix);
  };
  const bool conc = s.variable == SearchVariable::kConcurrency;
  const char* unit = conc ? "" : " req/s";
  if (!(s.min > 0) || !std::isfinite(s.min) || !std::isfinite(s.max))
    throw bad(fmt::format("the search range {:g}..{:g}{} must start above 0 and end at a finite value", s.min,
                          s.max, unit),
              "give MIN:MAX with 0 < MIN <= MAX, e.g. --search-range 1:64");
  if (s.max < s.min)
    throw bad(fmt::format("the search range {:g}..{:g}{} is empty: its high end is below its low end", s.min,
                          s.max, unit),
              "give MIN:MAX with MIN <= MAX, e.g. --search-range 1:64");
  if (conc && (s.min != std::floor(s.min) || s.max != std::floor(s.max) || s.step != std::floor(s.step)))
    throw bad(fmt::format("a concurrency search takes whole numbers; got range {:g}..{:g}, step {:g}", s.min,
                          s.max, s.step),
              "give whole numbers, e.g. --search-range 1:64");
  if (s.step < 0 || !std::isfinite(s.step))
    throw bad(fmt::format("the step {:g} must be above 0 (0: the default)", s.step), "e.g. --search-step 0.5");
  if (s.repeats < 1 || s.max_repeats < s.repeats)
    throw bad(fmt::format("repeats {} and max_repeats {}: need 1 <= repeats <= max_repeats", s.repeats,
                          s.max_repeats),
              "e.g. --search-repeats 2 --search-max-repeats 4");
  if (s.max_probes < 1) throw bad(fmt::format("max_probes {} must be at least 1", s.max_probes), "");
  if (s.max_time_s < 0 || !(s.noise >= 0) || !std::isfinite(s.noise))
    throw bad("max_time_s and noise must be 0 or more", "");
}

void judge_probe(SearchProbe& probe, const SloSearchSettings& s) {
  probe.terms.clear();
  std::vector<double> tput, good;
  bool no_completion = false;
  int64_t failed = 0;
  for (const auto& r : probe.runs) {
    tput.push_back(r.request_throughput);
    good.push_back(r.request_goodput);
    no_completion = no_completion || r.completed == 0;
    failed += r.failed;
  }
  probe.request_throughput = tput.empty() ? 0 : stats::median_of(tput);
  probe.request_goodput = good.empty() ? 0 : stats::median_of(good);
  bool any_fail = probe.runs.empty() || no_completion || failed > 0;
  bool any_uncertain = false;
  const size_t nterms = probe.runs.empty() ? 0 : probe.runs.front().slo.checks.size();
  for (size_t k = 0; k < nterms; ++k) {
    SearchTermResult t;
    t.term = probe.runs.front().slo.checks[k].term;
    for (const auto& r : probe.runs) t.values_ms.push_back(k < r.slo.checks.size() ? r.slo.checks[k].value_ms : 0);
    t.value_ms = stats::median_of(t.values_ms);
    // Results diff's rule: the runs' own spread, else the noise assumed.
    stats::RunNoise noise;
    noise.basis = probe.runs.size() >= 2 ? stats::NoiseBasis::kRepeats : stats::NoiseBasis::kGiven;
    noise.floor = std::max(stats::run_spread(t.values_ms), 1.0 + s.noise);
    t.noise_floor = noise.floor;
    if (no_completion) {
      t.verdict = ProbeVerdict::kFail;
      t.reason = "no request completed";
    } else {
      // limit / value > 1: the term holds; widened by F it must stay on its side of 1.
      const double ratio =
          t.value_ms > 0 ? t.term.limit_ms / t.value_ms : std::numeric_limits<double>::infinity();
      std::string why;
      auto within = stats::classify(ratio, ratio, 0.0, &why);
      auto cross = stats::apply_run_noise(within, ratio, ratio, why, noise, 0.0);
      t.verdict = cross.verdict == stats::Verdict::kFaster   ? ProbeVerdict::kPass
                  : cross.verdict == stats::Verdict::kSlower ? ProbeVerdict::kFail
                                                             : ProbeVerdict::kUncertain;
      t.reason = fmt::format("{:.3g} ms vs {:g} ms, noise x{:.3f}: {}", t.value_ms, t.term.limit_ms,
                             noise.floor, to_string(t.verdict));
    }
    any_fail = any_fail || t.verdict == ProbeVerdict::kFail;
    any_uncertain = any_uncertain || t.verdict == ProbeVerdict::kUncertain;
    probe.terms.push_back(std::move(t));
  }
  probe.verdict = any_fail ? ProbeVerdict::kFail : any_uncertain ? ProbeVerdict::kUncertain : ProbeVerdict::kPass;
}

namespace {

std::string probe_line(const SearchProbe& p, SearchVariable v, size_t index) {
  std::string terms;
  for (const auto& t : p.terms)
    terms += fmt::format("{}{} {:.3g} ms", terms.empty() ? "" : ", ", t.term.text, t.value_ms);
  int64_t failed = 0;
  for (const auto& r : p.runs) failed += r.failed;
  return fmt::format("slo search: probe {}: {}: {} ({} run{}; {:.3g} req/s, goodput {:.3g} req/s{}{}{})", index + 1,
                     describe_value(v, p.value), to_string(p.verdict), p.runs.size(), p.runs.size() == 1 ? "" : "s",
                     p.request_throughput, p.request_goodput, terms.empty() ? "" : "; ", terms,
                     failed > 0 ? fmt::format("; {} requests failed", failed) : "");
}

}  // namespace

SloSearchResult run_slo_search(const SloSearchSettings& s, const SearchHooks& hooks) {
  SloSearchResult out;
  run_slo_search(s, hooks, out);
  return out;
}

void run_slo_search(const SloSearchSettings& s, const SearchHooks& hooks, SloSearchResult& out) {
  out = SloSearchResult{};
  out.settings = s;
  const double t0 = hooks.now_s();
  const bool conc = s.variable == SearchVariable::kConcurrency;
  const double step = s.resolved_step();
  auto say = [&](const std::string& line) {
    if (hooks.on_line) hooks.on_line(line);
  };
  // A run threw: keep what was measured (the probe's finished runs too) and say why the search stopped.
  auto stop_on_error = [&](SearchProbe& p, const std::string& what) {
    if (!p.runs.empty()) {
      judge_probe(p, s);
      out.probes.push_back(std::move(p));
    }
    out.status = SearchStatus::kError;
    out.error = what;
    out.elapsed_s = hooks.now_s() - t0;
  };
  // Measures one value; false when the search must end (budget, interrupted).
  auto probe = [&](double value) -> bool {
    if (static_cast<int64_t>(out.probes.size()) >= s.max_probes) {
      out.status = SearchStatus::kBudget;
      say(fmt::format("slo search: stopping: max_probes ({}) reached", s.max_probes));
      return false;
    }
    if (s.max_time_s > 0 && hooks.now_s() - t0 >= s.max_time_s) {
      out.status = SearchStatus::kBudget;
      say(fmt::format("slo search: stopping: max_time_s ({:g} s) passed", s.max_time_s));
      return false;
    }
    SearchProbe p;
    p.value = value;
    for (int64_t r = 0;; ++r) {
      std::optional<SearchRun> run;
      try {
        run = hooks.measure(value, r);
      } catch (const std::exception& e) {
        stop_on_error(p, e.what());
        throw;
      } catch (...) {
        stop_on_error(p, "an unknown error");
        throw;
      }
      if (!run) {
        if (!p.runs.empty()) {
          judge_probe(p, s);
          out.probes.push_back(std::move(p));
        }
        out.status = SearchStatus::kInterrupted;
        return false;
      }
      p.runs.push_back(std::move(*run));
      if (r + 1 < s.repeats) continue;
      judge_probe(p, s);
      if (p.verdict != ProbeVerdict::kUncertain || r + 1 >= s.max_repeats) break;
      say(fmt::format("slo search: {}: within noise after {} runs; one more", describe_value(s.variable, value),
                      r + 1));
    }
    say(probe_line(p, s.variable, out.probes.size()));
    const bool pass = p.verdict == ProbeVerdict::kPass;
    out.probes.push_back(std::move(p));
    if (pass)
      out.highest_pass = value;
    else
      out.lowest_fail = value;
    return true;
  };
  auto finish = [&] { out.elapsed_s = hooks.now_s() - t0; };
  // Bracketing: double from the low end until a probe fails or the high end passes.
  for (double v = s.min;;) {
    if (!probe(v)) return finish();
    if (out.lowest_fail) break;
    if (v >= s.max) {
      out.status = SearchStatus::kAllPass;
      return finish();
    }
    v = std::min(conc ? std::max(v + 1, v * 2) : v * 2, s.max);
  }
  if (!out.highest_pass) {
    out.status = SearchStatus::kNonePass;
    return finish();
  }
  // Bisection between the highest pass and the lowest fail.
  while (*out.lowest_fail - *out.highest_pass > step) {
    double mid = (*out.highest_pass + *out.lowest_fail) / 2;
    if (conc) mid = std::floor(mid);
    if (!probe(mid)) return finish();
  }
  out.status = SearchStatus::kFound;
  return finish();
}

std::string slo_text(const std::vector<SloTerm>& terms) {
  std::string out;
  for (const auto& t : terms) out += (out.empty() ? "" : ",") + t.text;
  return out;
}

std::string knee_line(const SloSearchResult& r) {
  const auto& s = r.settings;
  auto val = [&](const std::optional<double>& v) { return v ? describe_value(s.variable, *v) : std::string("none"); };
  const std::string bracket =
      fmt::format("highest passing {}, lowest failing {}", val(r.highest_pass), val(r.lowest_fail));
  switch (r.status) {
    case SearchStatus::kFound:
      return fmt::format("knee: {} passes, {} fails (step {:g}; {} probes, {:.0f} s)",
                         describe_value(s.variable, *r.highest_pass), describe_value(s.variable, *r.lowest_fail),
                         s.resolved_step(), r.probes.size(), r.elapsed_s);
    case SearchStatus::kAllPass:
      return fmt::format("every probe passed up to the range's high end ({}): the knee is above it; raise the "
                         "range's MAX to find it",
                         describe_value(s.variable, s.max));
    case SearchStatus::kNonePass:
      return fmt::format("the range's low end ({}) already misses the SLOs: no value in the range meets them; "
                         "lower the range's MIN or relax --slo",
                         describe_value(s.variable, s.min));
    case SearchStatus::kBudget:
      return fmt::format("stopped by its budget after {} probes: {}", r.probes.size(), bracket);
    case SearchStatus::kInterrupted:
      return fmt::format("cut short after {} probes: {}", r.probes.size(), bracket);
    case SearchStatus::kError:
      return fmt::format("stopped by an error after {} probes ({}): {}", r.probes.size(), r.error, bracket);
  }
  return bracket;
}

}  // namespace magpie::serve
