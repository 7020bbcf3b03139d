// The XLSX writer: one sheet per table, a real zip container, clear error without the library.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "report/table.hpp"
#include "report/xlsx_writer.hpp"

namespace magpie::report {
namespace {

TEST(ReportTable, CsvCellsAndNumbers) {
  Table t{"x",
          {"a", "b", "c", "d"},
          {{Cell{std::string("q,1")}, Cell{1.5}, Cell{int64_t{3}}, Cell{true}}}};
  EXPECT_EQ(to_csv(t), "a,b,c,d\r\n\"q,1\",1.5,3,True\r\n");
  EXPECT_EQ(format_number(0.0), "0");
  EXPECT_EQ(format_number(1234567.25), "1234567.25");
  EXPECT_EQ(format_number(0.0000123), "1.23e-05");
  EXPECT_EQ(format_cell(Cell{}), "");
}

TEST(XlsxWriter, WritesAWorkbookOrSaysWhy) {
  const auto path = std::filesystem::temp_directory_path() / "magpie_xlsx_unit.xlsx";
  std::filesystem::remove(path);
  Table a{"GEMM", {"name", "time"}, {{Cell{std::string("aten::mm")}, Cell{2.5}}}};
  Table b{"a/very[long]:name that Excel would refuse?", {"x"}, {{Cell{int64_t{1}}}}};
  if (!xlsx_available()) {
    EXPECT_THROW(write_xlsx(path, {&a, &b}), Error);
    return;
  }
  write_xlsx(path, {&a, &b});
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {};
  in.read(magic, 2);
  EXPECT_EQ(std::string(magic, 2), "PK");  // xlsx is a zip
  EXPECT_GT(std::filesystem::file_size(path), 1000u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace magpie::report
