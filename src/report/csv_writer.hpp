#pragma once
// RFC 4180 CSV: fields with commas, quotes or newlines are quoted.
#include <string>
#include <string_view>
#include <vector>

namespace magpie::report {

class CsvWriter {
 public:
  void comment(std::string_view line);  // "# line"
  void raw(std::string_view text);      // appended as it is (e.g. a ready-made comment preamble)
  void row(const std::vector<std::string>& fields);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

std::string csv_escape(std::string_view field);
// Fixed-point with `decimals` digits, as Magpie writes "{:.2f}".
std::string fixed(double v, int decimals = 2);

}  // namespace magpie::report
