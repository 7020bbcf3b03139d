// Replays every saved fuzz reproducer (fuzz/regressions/) and every file of
// the public trace selection through what the fuzzer runs on one input
// (fuzz/trace_fuzz_target.cpp): ingest, gap analysis, stage split, roofline
// tables, graph alignment and the collective report. A crash the fuzzer found
// once stays fixed; in the debug preset (ASan/UBSan) this also checks memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "trace_fuzz_target.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() != ".md") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(FuzzRegressions, SavedReproducersRunClean) {
  const auto files = files_under(fs::path(MAGPIE_SOURCE_DIR) / "fuzz" / "regressions");
  ASSERT_FALSE(files.empty()) << "fuzz/regressions/ holds no reproducer";
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    EXPECT_NO_THROW(magpie::fuzz::run_trace_input(read_bytes(f)));
  }
}

TEST(FuzzRegressions, PublicTraceSelectionRunsClean) {
  const auto files = files_under(fs::path(MAGPIE_SOURCE_DIR) / "tests" / "data" / "public_traces");
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    if (f.filename().string().rfind("LICENSE", 0) == 0) continue;
    SCOPED_TRACE(f.string());
    EXPECT_NO_THROW(magpie::fuzz::run_trace_input(read_bytes(f)));
  }
}
