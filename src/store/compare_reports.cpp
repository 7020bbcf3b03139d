#include "store/compare_reports.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "store/report_diff_writers.hpp"

namespace magpie::store {

namespace fs = std::filesystem;

CompareReportsResult compare_benchmark_reports(const CompareReportsRequest& req) {
  const auto& dirs = req.workspace_dirs;
  if (dirs.size() < 2) {
    throw Error(ErrorKind::kUsage,
                fmt::format("compare_benchmark_reports needs two or more workspace_dirs, got {}",
                            dirs.size()));
  }
  if (!req.labels.empty() && req.labels.size() != dirs.size()) {
    throw Error(ErrorKind::kUsage,
                fmt::format("{} labels for {} workspace_dirs", req.labels.size(), dirs.size()), "",
                std::nullopt, "give one label per workspace, or none");
  }
  const bool csv = req.export_format == "csv" || req.export_format == "both";
  const bool json = req.export_format == "json" || req.export_format == "both";
  if (!csv && !json) {
    throw Error(ErrorKind::kUsage, fmt::format("export_format must be csv, json or both, not '{}'",
                                               req.export_format));
  }
  if (req.output_dir.empty())
    throw Error(ErrorKind::kUsage, "compare_benchmark_reports needs an output_dir");
  std::vector<DiffInput> inputs;
  for (size_t i = 0; i < dirs.size(); ++i) {
    std::error_code ec;
    if (!fs::is_directory(dirs[i], ec))
      throw Error(ErrorKind::kNotFound, "workspace not found (deleted or moved?)",
                  dirs[i].string());
    inputs.push_back({req.labels.empty() ? "" : req.labels[i], dirs[i]});
  }
  CompareReportsResult out;
  const auto kind = diff_workspace_kind(dirs[0]);
  bool same_kind = kind != WorkspaceKind::kOther;
  for (const auto& d : dirs) same_kind = same_kind && diff_workspace_kind(d) == kind;
  if (same_kind)
    out.diff = diff_reports(inputs, req.settings);
  else
    out.notes.push_back(
        "no metric diff: the workspaces are not all serving benchmarks or all kernel compares");

  bool all_tables = true;
  for (const auto& d : dirs) all_tables = all_tables && !find_op_tables(d).empty();
  if (all_tables)
    out.ops = compare_op_tables(inputs);
  else
    out.notes.push_back(
        "no op side-by-side: not every workspace has gap_analysis/ or tracelens/ tables");

  if (!out.diff && !out.ops) {
    throw Error(ErrorKind::kNotFound, "nothing to compare in these workspaces", dirs[0].string(),
                std::nullopt,
                "pass serving benchmark workspaces (benchmark_report.json), kernel compares "
                "(compare_report.json), "
                "or folders with gap_analysis/ or tracelens/ tables");
  }
  fs::create_directories(req.output_dir);
  auto write = [&](const std::string& name, const std::string& text) {
    auto p = req.output_dir / name;
    write_file_atomic(p, text);
    out.files.push_back(p);
  };
  if (out.diff) {
    if (csv) write("report_diff.csv", diff_csv(*out.diff));
    if (json) write("report_diff.json", diff_json(*out.diff).dump(2) + "\n");
  }
  if (out.ops) {
    write("op_comparison.csv", op_table_csv(*out.ops));  // a wide table: CSV in every format
  }
  return out;
}

}  // namespace magpie::store
