#pragma once
// Several profiler captures of one run side by side: for the kernels that
// take the most time, their share of kernel time in each capture and how far
// that share moves between captures, so a one-off capture is not taken for
// the steady state.
#include <optional>
#include <string>
#include <vector>

#include "analysis/gap_analysis.hpp"

namespace magpie::analysis {

// One capture as gap analysis saw it; `result` absent: the capture is missing
// (it did not flush, or its analysis failed) and `missing_reason` says why.
struct CaptureKernels {
  std::string label;  // "capture_1"
  std::optional<GapAnalysisResult> result;
  std::string missing_reason;
};

struct StabilityRow {
  std::string name;
  // Per analysed capture, in capture order: percent of that capture's kernel
  // time (0 when the kernel did not run in it).
  std::vector<double> share_pct;
  double min_pct = 0, max_pct = 0, mean_pct = 0;
  double cv = 0;  // population standard deviation / mean; 0 with one capture
};

struct CaptureStability {
  std::vector<std::string> analysed;               // labels, capture order
  std::vector<std::pair<std::string, std::string>> missing;  // label, why
  std::vector<StabilityRow> rows;                  // by mean share, descending
  // The largest max-min spread over the rows, in percentage points.
  double max_spread_pct = 0;
};

// The top_k kernels by mean share over the analysed captures.
CaptureStability capture_stability(const std::vector<CaptureKernels>& captures, size_t top_k);

// The table as text for summary.txt (one line a kernel, a column a capture).
std::string format_capture_stability(const CaptureStability& s);

}  // namespace magpie::analysis
