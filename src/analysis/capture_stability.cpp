#include "analysis/capture_stability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace magpie::analysis {

CaptureStability capture_stability(const std::vector<CaptureKernels>& captures, size_t top_k) {
  CaptureStability out;
  std::vector<std::map<std::string, double>> shares;  // per analysed capture: name -> percent
  for (const auto& c : captures) {
    if (!c.result) {
      out.missing.emplace_back(c.label, c.missing_reason);
      continue;
    }
    out.analysed.push_back(c.label);
    auto& m = shares.emplace_back();
    const double total = c.result->total_duration_us;
    for (const auto& k : c.result->merged)
      if (total > 0) m[k.name] += 100.0 * k.total_us / total;
  }
  if (shares.empty()) return out;
  std::map<std::string, StabilityRow> rows;
  for (size_t i = 0; i < shares.size(); ++i)
    for (const auto& [name, pct] : shares[i]) {
      auto& r = rows[name];
      if (r.share_pct.empty()) {
        r.name = name;
        r.share_pct.assign(shares.size(), 0.0);
      }
      r.share_pct[i] = pct;
    }
  std::vector<StabilityRow> all;
  for (auto& [name, r] : rows) {
    const double n = static_cast<double>(r.share_pct.size());
    r.min_pct = *std::min_element(r.share_pct.begin(), r.share_pct.end());
    r.max_pct = *std::max_element(r.share_pct.begin(), r.share_pct.end());
    double sum = 0;
    for (double v : r.share_pct) sum += v;
    r.mean_pct = sum / n;
    double var = 0;
    for (double v : r.share_pct) var += (v - r.mean_pct) * (v - r.mean_pct);
    r.cv = r.mean_pct > 0 ? std::sqrt(var / n) / r.mean_pct : 0.0;
    all.push_back(std::move(r));
  }
  // Ties (equal mean) by name, so the table does not depend on map order.
  std::sort(all.begin(), all.end(), [](const StabilityRow& a, const StabilityRow& b) {
    return a.mean_pct != b.mean_pct ? a.mean_pct > b.mean_pct : a.name < b.name;
  });
  if (all.size() > top_k) all.resize(top_k);
  for (const auto& r : all) out.max_spread_pct = std::max(out.max_spread_pct, r.max_pct - r.min_pct);
  out.rows = std::move(all);
  return out;
}

std::string format_capture_stability(const CaptureStability& s) {
  std::string out = fmt::format("Capture stability ({} analysed", s.analysed.size());
  if (!s.missing.empty()) {
    out += ", missing:";
    for (const auto& [label, why] : s.missing) out += fmt::format(" {} ({})", label, why);
  }
  out += "); share of kernel time per capture:\n";
  if (s.rows.empty()) return out + "  (no capture was analysed)\n";
  out += "  ";
  for (const auto& label : s.analysed) out += fmt::format("{:>10} ", label.substr(0, 10));
  out += fmt::format("{:>8} {:>8} {:>6}  kernel\n", "min%", "max%", "CV");
  for (const auto& r : s.rows) {
    out += "  ";
    for (double v : r.share_pct) out += fmt::format("{:>10.2f} ", v);
    std::string name = r.name.size() > 80 ? r.name.substr(0, 77) + "..." : r.name;
    out += fmt::format("{:>8.2f} {:>8.2f} {:>6.3f}  {}\n", r.min_pct, r.max_pct, r.cv, name);
  }
  out += fmt::format("  largest spread: {:.2f} percentage points\n", s.max_spread_pct);
  return out;
}

}  // namespace magpie::analysis
