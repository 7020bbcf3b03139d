#include "report/xlsx_writer.hpp"

#include <fmt/format.h>

#include <set>
#include <string>

#include "core/error.hpp"

#if __has_include(<xlsxwriter.h>)
#include <xlsxwriter.h>
#define MAGPIE_HAVE_XLSXWRITER 1
#endif

namespace magpie::report {

#ifdef MAGPIE_HAVE_XLSXWRITER

namespace {

std::string sheet_name(const std::string& name, std::set<std::string>& used) {
  std::string base;
  for (char c : name)
    base += std::string_view("[]:*?/\\").find(c) == std::string_view::npos ? c : '_';
  if (base.empty()) base = "sheet";
  base = base.substr(0, 31);
  std::string candidate = base;
  for (int i = 2; used.contains(candidate); ++i) {
    const std::string suffix = fmt::format("_{}", i);
    candidate = base.substr(0, 31 - suffix.size()) + suffix;
  }
  used.insert(candidate);
  return candidate;
}

}  // namespace

bool xlsx_available() { return true; }

void write_xlsx(const std::filesystem::path& path, const std::vector<const Table*>& tables) {
  const std::string file = path.string();
  lxw_workbook* wb = workbook_new(file.c_str());
  if (!wb) throw Error(ErrorKind::kInternal, "cannot create the workbook", file);
  lxw_format* bold = workbook_add_format(wb);
  format_set_bold(bold);
  std::set<std::string> used;
  for (const Table* t : tables) {
    lxw_worksheet* ws = workbook_add_worksheet(wb, sheet_name(t->name, used).c_str());
    for (size_t c = 0; c < t->columns.size(); ++c) {
      worksheet_write_string(ws, 0, static_cast<lxw_col_t>(c), t->columns[c].c_str(), bold);
    }
    for (size_t r = 0; r < t->rows.size(); ++r) {
      const auto row = static_cast<lxw_row_t>(r + 1);
      for (size_t c = 0; c < t->rows[r].size(); ++c) {
        const auto col = static_cast<lxw_col_t>(c);
        const Cell& cell = t->rows[r][c];
        if (const auto* d = std::get_if<double>(&cell)) {
          worksheet_write_number(ws, row, col, *d, nullptr);
        } else if (const auto* i = std::get_if<int64_t>(&cell)) {
          worksheet_write_number(ws, row, col, static_cast<double>(*i), nullptr);
        } else if (const auto* b = std::get_if<bool>(&cell)) {
          worksheet_write_boolean(ws, row, col, *b ? 1 : 0, nullptr);
        } else if (const auto* s = std::get_if<std::string>(&cell); s && !s->empty()) {
          // Excel caps a cell at 32767 characters.
          worksheet_write_string(ws, row, col, s->substr(0, 32767).c_str(), nullptr);
        }
      }
    }
    worksheet_freeze_panes(ws, 1, 0);
  }
  if (lxw_error err = workbook_close(wb); err != LXW_NO_ERROR) {
    throw Error(ErrorKind::kInternal,
                fmt::format("writing the workbook failed: {}", lxw_strerror(err)), file);
  }
}

#else

bool xlsx_available() { return false; }

void write_xlsx(const std::filesystem::path& path, const std::vector<const Table*>&) {
  throw Error(ErrorKind::kUsage, "this magpie was built without libxlsxwriter: no Excel output",
              path.string(), std::nullopt,
              "install libxlsxwriter-dev and rebuild, or use --export-format csv");
}

#endif

}  // namespace magpie::report
