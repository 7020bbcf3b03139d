#pragma once
// Writers of a ReportDiff: a console table, CSV (one row per metric or kernel
// per candidate) and JSON. They format; they never recompute.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "store/report_diff.hpp"

namespace magpie::store {

enum class DiffFormat { kTable, kCsv, kJson };
std::optional<DiffFormat> diff_format_from_string(std::string_view text);

std::string diff_table(const ReportDiff& diff);
std::string diff_csv(const ReportDiff& diff);
nlohmann::json diff_json(const ReportDiff& diff);
std::string write_diff(const ReportDiff& diff, DiffFormat format);

}  // namespace magpie::store
