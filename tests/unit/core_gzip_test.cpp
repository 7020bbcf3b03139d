// gunzip and read_text_head (ISA-L underneath) on gzip written by zlib, the
// writer most profilers use: one member, several, empty, damaged, cut short,
// with a lying trailer, and the shipped traces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/gzip.hpp"
#include "core/text_head.hpp"
#include "gzip_writer.hpp"

namespace magpie {
namespace {

namespace fs = std::filesystem;

using test_support::gzip_of;

// Text that compresses a little (so a stream spans many deflate blocks).
std::string sample_text(size_t bytes) {
  std::string t;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  while (t.size() < bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t += "{\"name\": \"k" + std::to_string(x % 977) + "\", \"ts\": " + std::to_string(x % 100000) + "},\n";
  }
  t.resize(bytes);
  return t;
}

Error gunzip_error(std::string_view gz, const std::string& origin) {
  try {
    gunzip(gz, origin);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error for " << origin;
  return Error(ErrorKind::kInternal, "none");
}

TEST(Gunzip, OneMemberIsExact) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{70000}, size_t{3} << 20}) {
    const std::string text = sample_text(n);
    EXPECT_EQ(gunzip(gzip_of(text), "a.gz").view(), text) << n;
  }
}

TEST(Gunzip, EmptyMember) { EXPECT_EQ(gunzip(gzip_of(""), "empty.gz").size(), 0u); }

TEST(Gunzip, SeveralMembersAreConcatenated) {
  const std::string a = sample_text(200000), b = sample_text(5), c = sample_text(90000);
  const std::string gz = gzip_of(a) + gzip_of(b, 1) + gzip_of("") + gzip_of(c, 9);
  EXPECT_EQ(gunzip(gz, "many.gz").view(), a + b + c);
}

TEST(Gunzip, StoredBlocksAreRead) {
  const std::string text = sample_text(150000);
  EXPECT_EQ(gunzip(gzip_of(text, 0), "stored.gz").view(), text);
}

TEST(Gunzip, TrailerLengthThatDisagreesIsCorrupt) {
  // The output is sized by the trailer when plausible and grows past it; the
  // length check then says the trailer is wrong.
  const std::string text = sample_text(400000);
  for (uint32_t isize : {0u, 10u, 399999u}) {
    std::string gz = gzip_of(text);
    std::memcpy(gz.data() + gz.size() - 4, &isize, 4);
    const Error e = gunzip_error(gz, "isize.gz");
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat) << isize;  // ISA-L checks ISIZE
    EXPECT_NE(std::string(e.what()).find("trailer"), std::string::npos) << e.what();
  }
}

TEST(Gunzip, CutShortIsTruncatedAtItsSize) {
  const std::string gz = gzip_of(sample_text(300000));
  for (size_t keep : {size_t{20}, gz.size() / 3, gz.size() - 9, gz.size() - 1}) {
    const Error e = gunzip_error(std::string_view(gz).substr(0, keep), "cut.json.gz");
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat) << keep;
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << keep << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("cut.json.gz"), std::string::npos) << e.what();
    EXPECT_EQ(e.byte_offset(), keep);
  }
  EXPECT_NE(std::string(gunzip_error(std::string_view(gz).substr(0, 10), "tiny.gz").what()).find("too short"),
            std::string::npos);
}

TEST(Gunzip, DamageIsCorruptWithItsOffset) {
  const std::string good = gzip_of(sample_text(300000));
  std::string bad = good;
  for (size_t i = bad.size() / 2; i < bad.size() / 2 + 64; ++i) bad[i] = static_cast<char>(~bad[i]);
  const Error e = gunzip_error(bad, "bad.json.gz");
  EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
  EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  ASSERT_TRUE(e.byte_offset().has_value());
  EXPECT_GE(*e.byte_offset(), bad.size() / 2);
  EXPECT_LE(*e.byte_offset(), bad.size());
  // One flipped CRC bit: the data inflates, the check fails.
  std::string crc = good;
  crc[crc.size() - 8] = static_cast<char>(crc[crc.size() - 8] ^ 1);
  EXPECT_NE(std::string(gunzip_error(crc, "crc.gz").what()).find("CRC32"), std::string::npos);
  // A second member that is not gzip at all.
  EXPECT_NE(std::string(gunzip_error(good + std::string(40, 'x'), "tail.gz").what()).find("header"),
            std::string::npos);
}

fs::path scratch(const std::string& name, std::string_view bytes) {
  const fs::path p = fs::temp_directory_path() / ("magpie_gzip_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

TEST(TextHead, GzipPlainSeveralMembersAndDamage) {
  const std::string text = sample_text(500000);
  const fs::path gz = scratch("head.json.gz", gzip_of(text));
  EXPECT_EQ(read_text_head(gz, 1000), text.substr(0, 1000));
  EXPECT_EQ(read_text_head(gz, 10 << 20), text);  // asks for more than there is
  const fs::path plain = scratch("head.json", text);
  EXPECT_EQ(read_text_head(plain, 70000), text.substr(0, 70000));
  const fs::path two = scratch("two.json.gz", gzip_of("ab") + gzip_of("cd"));
  EXPECT_EQ(read_text_head(two, 100), "abcd");
  // Cut in the middle: what inflated before the cut, no error.
  const std::string whole = gzip_of(text);
  const fs::path cut = scratch("cut.json.gz", std::string_view(whole).substr(0, whole.size() / 2));
  const std::string head = read_text_head(cut, 10 << 20);
  EXPECT_GT(head.size(), 100000u);
  EXPECT_EQ(head, text.substr(0, head.size()));
  EXPECT_THROW(read_text_head(fs::temp_directory_path() / "no_such_file.gz", 10), Error);
  for (const auto& p : {gz, plain, two, cut}) fs::remove(p);
}

// The shipped traces inflate to the same text through both paths.
TEST(Gunzip, ShippedTracesMatchTheirHead) {
  const fs::path p = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/h200_graphs/graph_replay.json.gz";
  const PaddedBuffer raw = read_file(p);
  const PaddedBuffer text = gunzip(raw.view(), p.string());
  EXPECT_GT(text.size(), 10000u);
  EXPECT_EQ(read_text_head(p, 4096), text.view().substr(0, 4096));
  EXPECT_NE(text.view().find("\"traceEvents\""), std::string_view::npos);
}

}  // namespace
}  // namespace magpie
