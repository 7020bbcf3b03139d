#pragma once
// One .xlsx workbook, one sheet per table (libxlsxwriter). Builds without the
// library too: then xlsx_available() is false and write_xlsx throws.
#include <filesystem>
#include <vector>

#include "report/table.hpp"

namespace magpie::report {

bool xlsx_available();

// Sheet names are the table names cut to Excel's 31 characters, with the characters Excel forbids
// replaced and duplicates numbered. Throws magpie::Error(kInternal) when the
// library is missing or the file cannot be written.
void write_xlsx(const std::filesystem::path& path, const std::vector<const Table*>& tables);

}  // namespace magpie::report
