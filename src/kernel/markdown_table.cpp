#include "kernel/markdown_table.hpp"

#include <fmt/format.h>

namespace magpie::kernel {

namespace {
std::string cell(std::string s, size_t width = 80) {
  for (auto& c : s) {
    if (c == '|' || c == '\n') c = ' ';
  }
  return s.size() > width ? s.substr(0, width - 3) + "..." : s;
}

// SKIPPED for a reason (no GPU to time on) reads "not measured"; --no-perf stays SKIPPED.
std::string perf_cell(const Evaluation& e) {
  if (e.performance.state == StageState::kSkipped && e.correct() && !e.performance.cause.empty())
    return "not measured";
  return to_string(e.performance.state);
}

// The analyze table's last column: why, in one line.
std::string why_cell(const Evaluation& e) {
  std::string name;
  const StageResult* st = e.deciding_stage(&name);
  if (st == nullptr || st->cause.empty()) return "";
  return cell(name + ": " + st->cause, 160);
}
}  // namespace

std::string markdown_table(const std::vector<Evaluation>& evals, const Ranking* ranking) {
  std::string out = ranking ? "| # | kernel | compile | correct | perf | median (us) | CV | samples | rank | speedup vs baseline (95% CI) | verdict |\n"
                              "|---|---|---|---|---|---:|---:|---:|---:|---|---|\n"
                            : "| kernel | type | compile | correct | perf | latency | median (us) | CV | samples | timing source | why |\n"
                              "|---|---|---|---|---|---|---:|---:|---:|---|---|\n";
  for (size_t i = 0; i < evals.size(); ++i) {
    const auto& e = evals[i];
    auto samples = e.samples_ns();
    std::string median = "-", cv = "-";
    if (!samples.empty() && e.measured()) {
      double m = 0, sd = 0;
      for (double s : samples) m += s;
      m /= static_cast<double>(samples.size());
      for (double s : samples) sd += (s - m) * (s - m);
      sd = samples.size() > 1 ? std::sqrt(sd / static_cast<double>(samples.size() - 1)) : 0;
      double med = 0;
      std::vector<double> v = samples;
      std::sort(v.begin(), v.end());
      med = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      median = fmt::format("{:.3f}", med / 1e3);
      cv = fmt::format("{:.2f}%", m > 0 ? 100 * sd / m : 0);
    }
    if (!ranking) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(e.spec.id),
                         to_string(e.spec.type), to_string(e.compiling.state), to_string(e.correctness.state),
                         perf_cell(e), to_string(e.latency.state), median, cv, samples.size(), e.timing_source(),
                         why_cell(e));
      continue;
    }
    const auto& row = ranking->rows[i];
    std::string rank = row.rank ? std::to_string(*row.rank) : "-";
    std::string speedup = "-", verdict = row.eligible ? "" : "not ranked: " + row.reason;
    if (i == ranking->baseline) {
      speedup = "baseline";
    } else if (row.vs_baseline) {
      speedup = fmt::format("{:.3f}x ({:.3f}-{:.3f})", row.vs_baseline->speedup, row.vs_baseline->ci_low,
                            row.vs_baseline->ci_high);
      verdict = to_string(row.vs_baseline->verdict);
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", i, cell(e.spec.id),
                       to_string(e.compiling.state), to_string(e.correctness.state), perf_cell(e), median, cv,
                       samples.size(), rank, speedup, cell(verdict, 200));
  }
  return out;
}

}  // namespace magpie::kernel
