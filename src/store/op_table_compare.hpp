#pragma once
// Side-by-side op/kernel tables of two or more workspaces: per kernel name its
// GPU time, calls, share of the total and the delta against the first workspace.
// Tables come from the gap analysis (gap_analysis/gap_analysis.csv; top-k rows
// only) when present, else from TraceLens (tracelens/<stage or rankN>/kernel_summary.csv,
// one section per stage). Sections present in every workspace are compared.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/report_diff.hpp"

namespace magpie::store {

struct OpCell {
  double time_us = 0;
  int64_t calls = 0;
  double share_pct = 0;  // of the section's total GPU time, as the source table states it
};

struct OpRow {
  std::string section;  // "gap_analysis", "tracelens/decode", ...
  std::string name;
  std::vector<std::optional<OpCell>> cells;  // per workspace; nullopt: not in that table
};

struct OpTableComparison {
  std::vector<std::string> labels;
  std::vector<std::filesystem::path> workspaces;
  std::vector<std::string> sections;
  std::vector<OpRow> rows;  // by section, then the baseline's time (largest first)
  std::vector<std::string> warnings;
};

struct OpTableSource {
  std::string section;
  std::filesystem::path csv;
};
// The op tables a workspace holds (empty when none).
std::vector<OpTableSource> find_op_tables(const std::filesystem::path& workspace);

// Throws Error(kUsage) for fewer than two inputs, kNotFound when a workspace
// has no op table.
OpTableComparison compare_op_tables(const std::vector<DiffInput>& inputs);

// section, name, then per workspace "<label> time_us", "<label> calls",
// "<label> share_pct", and for each candidate "<label> delta_us", "<label> delta_pct".
std::string op_table_csv(const OpTableComparison& table);

}  // namespace magpie::store
