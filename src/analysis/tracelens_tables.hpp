#pragma once
// A stage's analysis rendered as TraceLens-style tables (column names as
// TraceLens writes them) plus Magpie's compact roofline summary (docs/MAGPIE_COMPATIBILITY.md §6).
#include <string>
#include <vector>

#include "analysis/roofline_table.hpp"
#include "report/table.hpp"

namespace magpie::analysis {

// Magpie's `*_kernel_roofline_simple.csv` columns, in Magpie's order.
const std::vector<std::string>& simple_summary_columns();

struct StageTables {
  report::Table gpu_timeline;
  report::Table ops_summary;
  report::Table ops_summary_by_category;
  report::Table kernel_summary;
  std::vector<report::Table> category_tables;  // one per op category present (GEMM, SDPA_fwd, ...)
  report::Table simple_summary;                // the compact CSV
  std::vector<const report::Table*> all() const;  // every table but the compact one, in sheet order
};

StageTables make_stage_tables(const StageAnalysis& analysis);

}  // namespace magpie::analysis
