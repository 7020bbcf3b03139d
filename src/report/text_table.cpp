#include "report/text_table.hpp"

#include <algorithm>

namespace magpie::report {

namespace {
std::string clip(const std::string& s, size_t max_width) {
  if (max_width == 0 || s.size() <= max_width) return s;
  if (max_width <= 3) return s.substr(0, max_width);
  return s.substr(0, max_width - 3) + "...";
}
}  // namespace

std::string render_text_table(const std::vector<TextColumn>& columns,
                              const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].header.size();
  for (const auto& r : rows)
    for (size_t c = 0; c < columns.size() && c < r.size(); ++c)
      width[c] = std::max(width[c], clip(r[c], columns[c].max_width).size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < columns.size(); ++c) {
      std::string cell = c < cells.size() ? clip(cells[c], columns[c].max_width) : "";
      std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      out += columns[c].right_align ? pad + cell : cell + pad;
      if (c + 1 < columns.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> headers;
  for (const auto& c : columns) headers.push_back(c.header);
  std::string out = line(headers);
  size_t total = 0;
  for (size_t c = 0; c < columns.size(); ++c) total += width[c] + (c + 1 < columns.size() ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace magpie::report
