#pragma once
// Fixed-width console tables (left-aligned text, right-aligned numbers).
#include <string>
#include <vector>

namespace magpie::report {

struct TextColumn {
  std::string header;
  bool right_align = false;
  size_t max_width = 0;  // 0 = unlimited; longer cells are truncated with "..."
};

std::string render_text_table(const std::vector<TextColumn>& columns,
                              const std::vector<std::vector<std::string>>& rows);

}  // namespace magpie::report
