#include "report/table.hpp"

#include <fmt/format.h>

#include <cmath>

#include "report/csv_writer.hpp"

namespace magpie::report {

std::string format_number(double v) {
  if (!std::isfinite(v)) return "";
  if (v == 0) return "0";
  return fmt::format("{}", v);  // shortest text that reads back as the same double
}

std::string format_cell(const Cell& cell) {
  struct Visitor {
    std::string operator()(std::monostate) const { return {}; }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(double v) const { return format_number(v); }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(bool v) const { return v ? "True" : "False"; }
  };
  return std::visit(Visitor{}, cell);
}

std::string to_csv(const Table& table) {
  CsvWriter w;
  w.row(table.columns);
  std::vector<std::string> fields;
  for (const auto& row : table.rows) {
    fields.clear();
    for (const auto& c : row) fields.push_back(format_cell(c));
    w.row(fields);
  }
  return w.str();
}

}  // namespace magpie::report
