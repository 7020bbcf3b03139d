#include "html/csv_file.hpp"

#include <charconv>
#include <sstream>

#include "core/csv_line.hpp"
#include "core/file_io.hpp"

namespace magpie::html {

std::optional<size_t> CsvFile::column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  return std::nullopt;
}

std::optional<double> CsvFile::number(const std::vector<std::string>& row,
                                      std::string_view column_name) const {
  auto c = column(column_name);
  if (!c || *c >= row.size() || row[*c].empty()) return std::nullopt;
  const std::string& cell = row[*c];
  double v = 0;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || end != cell.data() + cell.size()) return std::nullopt;
  return v;
}

std::string CsvFile::text(const std::vector<std::string>& row, std::string_view column_name) const {
  auto c = column(column_name);
  return c && *c < row.size() ? row[*c] : std::string();
}

std::optional<CsvFile> read_csv_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  PaddedBuffer buffer = read_file(path);
  std::istringstream in{std::string(buffer.view())};
  CsvFile csv;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto cells = split_csv_line(line);
    if (first) {
      csv.header = std::move(cells);
      first = false;
    } else {
      csv.rows.push_back(std::move(cells));
    }
  }
  return csv;
}

}  // namespace magpie::html
