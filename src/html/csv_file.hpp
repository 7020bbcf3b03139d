#pragma once
// Reads back a CSV this tool wrote (TraceLens stage tables): header and rows,
// cells by column name. Used only where no typed result carries the table.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace magpie::html {

struct CsvFile {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::optional<size_t> column(std::string_view name) const;
  // The cell as a number; nullopt when the column is missing or the cell is empty/not numeric.
  std::optional<double> number(const std::vector<std::string>& row,
                               std::string_view column_name) const;
  std::string text(const std::vector<std::string>& row, std::string_view column_name) const;
};

// nullopt when the file does not exist; throws Error(kUnreadable) when it cannot be read.
std::optional<CsvFile> read_csv_file(const std::filesystem::path& path);

}  // namespace magpie::html
