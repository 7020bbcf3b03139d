#pragma once
// Splits one CSV line (RFC 4180 quoting, no embedded newlines): enough for
// the profilers' outputs, which quote every field, and for our own CSVs.
#include <string>
#include <string_view>
#include <vector>

namespace magpie {

std::vector<std::string> split_csv_line(std::string_view line);

}  // namespace magpie
