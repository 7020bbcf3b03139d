#pragma once
// A report table as data: named columns and typed cells, so the CSV and the
// XLSX writers render the same content (numbers stay numbers in Excel).
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace magpie::report {

using Cell = std::variant<std::monostate, std::string, double, int64_t, bool>;

struct Table {
  std::string name;  // file stem / sheet name
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

// CSV text of a cell: "" for none, doubles as the shortest text that reads
// back exactly (as Python's repr), bools as True/False like pandas.
std::string format_cell(const Cell& cell);
std::string format_number(double v);
// RFC 4180 CSV with a header row.
std::string to_csv(const Table& table);

}  // namespace magpie::report
