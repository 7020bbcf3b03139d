#include "report/csv_writer.hpp"

#include <fmt/format.h>

namespace magpie::report {

std::string csv_escape(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

void CsvWriter::row(const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out_ += ',';
    out_ += csv_escape(fields[i]);
  }
  out_ += "\r\n";
}

}  // namespace magpie::report
