#pragma once
// RFC 4180 CSV: fields with commas, quotes or newlines are quoted. No comment
// lines: pandas.read_csv and Python's csv module read the file with defaults.
#include <string>
#include <string_view>
#include <vector>

namespace magpie::report {

class CsvWriter {
 public:
  void row(const std::vector<std::string>& fields);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

std::string csv_escape(std::string_view field);
// Fixed-point with `decimals` digits, as Magpie writes "{:.2f}".
std::string fixed(double v, int decimals = 2);

}  // namespace magpie::report
