// Parsing a trace while its text arrives (ArrivingText: inflated from .json.gz
// or read from .json, + parse_kineto(text)) must give exactly what the
// whole-text path gives, and bad gzip must still be
// reported as before. Real traces from ../shared/traces; gzip files the tests
// need in other shapes (several members, cut short) are written with zlib.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/gzip.hpp"
#include "core/arriving_text.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/string_pool.hpp"
#include "trace/trace_loader.hpp"
#include "gzip_writer.hpp"

namespace magpie {
namespace {

namespace fs = std::filesystem;

using test_support::gzip_of;

PaddedBuffer buffer_of(std::string_view s) {
  PaddedBuffer b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

PaddedBuffer shared_trace(const char* name) {
  return read_file(fs::path(MAGPIE_SHARED_TRACES) / name);
}

constexpr const char* kH200 = "h200/llama_4layer_bs16_prompt1024_decode16.json.gz";
constexpr const char* kVllmGraph = "public/traces__inference__vllm_decode_full__graph_execution.json.gz";

TEST(ArrivingText, StreamsTheSameBytesAsOneShotGunzip) {
  PaddedBuffer gz = shared_trace(kH200);
  PaddedBuffer whole = gunzip(gz.view(), "h200");
  auto stream = ArrivingText::inflate(std::move(gz), "h200");
  size_t first = stream->wait_for(1000);
  EXPECT_GE(first, 1000u);
  EXPECT_EQ(std::memcmp(stream->data(), whole.data(), 1000), 0);
  auto done = stream->finish();
  EXPECT_TRUE(done.streamed);
  ASSERT_EQ(done.text.size(), whole.size());
  EXPECT_EQ(done.text.view(), whole.view());
}

TEST(ArrivingText, SeveralMembersFallBackToTheWholeFilePath) {
  std::string two = gzip_of("{\"traceEvents\": [") + gzip_of("]}");
  auto stream = ArrivingText::inflate(buffer_of(two), "two.gz");
  auto done = stream->finish();
  EXPECT_FALSE(done.streamed);
  EXPECT_EQ(done.text.view(), "{\"traceEvents\": []}");
}

// The fuzzer's out-of-memory find: a small gzip whose trailer claims ~4 GiB
// made both inflate paths allocate that much up front.
TEST(GzipTrailer, ImplausibleSizesAreNeverAllocated) {
  EXPECT_EQ(plausible_gzip_size(100, 5000), 5000u);
  EXPECT_EQ(plausible_gzip_size(100, 100 * 1032 + 64), 100u * 1032 + 64);
  EXPECT_EQ(plausible_gzip_size(100, 100 * 1032 + 65), 0u);
  EXPECT_EQ(plausible_gzip_size(2752, 0xFFFFFFFFu), 0u);
  // A lying trailer on a real stream: both paths end with the data or a clear
  // error, sized by what inflates.
  std::string gz = gzip_of("{\"traceEvents\": []}");
  const uint32_t lie = 0xFFFFFFF0u;
  std::memcpy(gz.data() + gz.size() - 4, &lie, 4);
  try {
    PaddedBuffer out = gunzip(gz, "lie.gz");
    EXPECT_EQ(out.view(), "{\"traceEvents\": []}");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat) << e.what();
  }
  auto stream = ArrivingText::inflate(buffer_of(gz), "lie.gz");
  try {
    auto done = stream->finish();
    EXPECT_FALSE(done.streamed);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat) << e.what();
  }
}

TEST(ArrivingText, TruncatedStreamIsBadFormatNamingTheFile) {
  std::string gz = gzip_of(std::string(200000, 'x') + "tail");
  gz.resize(gz.size() / 2);
  auto stream = ArrivingText::inflate(buffer_of(gz), "cut.json.gz");
  try {
    stream->finish();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("cut.json.gz"), std::string::npos) << e.what();
  }
}

void expect_same_trace(const trace::Trace& a, const trace::Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (size_t r = 0; r < a.events.size(); ++r) {
    ASSERT_EQ(a.name(r), b.name(r)) << "row " << r;
    ASSERT_EQ(a.events.ts_ns[r], b.events.ts_ns[r]) << "row " << r;
    ASSERT_EQ(a.events.dur_ns[r], b.events.dur_ns[r]) << "row " << r;
    ASSERT_EQ(a.events.correlation[r], b.events.correlation[r]) << "row " << r;
  }
  EXPECT_EQ(a.stats.events_seen, b.stats.events_seen);
  EXPECT_EQ(a.stats.raw_bytes, b.stats.raw_bytes);
  EXPECT_EQ(a.devices.size(), b.devices.size());
  EXPECT_EQ(a.rank, b.rank);
}

class StreamingKineto : public ::testing::TestWithParam<std::tuple<const char*, size_t, unsigned>> {};

TEST_P(StreamingKineto, SameTraceAsTheWholeTextPath) {
  auto [name, chunk_bytes, threads] = GetParam();
  trace::IngestOptions o;
  o.chunk_bytes = chunk_bytes;
  o.threads = threads;
  PaddedBuffer gz = shared_trace(name);
  trace::Trace whole = trace::parse_kineto(gunzip(gz.view(), name), name, o);
  PaddedBuffer text = gunzip(gz.view(), name);
  auto stream = ArrivingText::inflate(std::move(gz), name);
  trace::Trace streamed = trace::parse_kineto(*stream, name, o);
  EXPECT_GT(whole.events.size(), 500u);
  expect_same_trace(whole, streamed);
  // The same text read from an uncompressed file, as it arrives.
  fs::path file = fs::temp_directory_path() / ("magpie_stream_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" + std::to_string(chunk_bytes) + "_" + std::to_string(threads) + ".json");
  { std::ofstream(file, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size())); }
  auto reading = ArrivingText::read(file);
  trace::Trace read_streamed = trace::parse_kineto(*reading, name, o);
  expect_same_trace(whole, read_streamed);
  fs::remove(file);
}

// Small chunks make hundreds of cuts, many of them while the text is still arriving.
INSTANTIATE_TEST_SUITE_P(SharedTraces, StreamingKineto,
                         ::testing::Values(std::make_tuple(kH200, size_t{1} << 20, 2u),
                                           std::make_tuple(kH200, size_t{16} << 10, 3u),
                                           std::make_tuple(kVllmGraph, size_t{4} << 10, 1u),
                                           std::make_tuple(kVllmGraph, size_t{4} << 10, 4u)));

TEST(StreamingKineto, TruncatedArrayInAWholeGzipIsReportedAsTruncated) {
  std::string json = "{\"traceEvents\": [";
  for (int i = 0; i < 3000; ++i) json += R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + std::to_string(i) + R"(,"dur":1},)";
  json += R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1)";  // cut inside the last event
  trace::IngestOptions o;
  o.chunk_bytes = 4096;
  auto stream = ArrivingText::inflate(buffer_of(gzip_of(json)), "cut.json.gz");
  try {
    trace::parse_kineto(*stream, "cut.json.gz", o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

fs::path scratch_file(const std::string& name, std::string_view bytes) {
  fs::path file = fs::temp_directory_path() / ("magpie_open_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file;
}

// open() reads a gzip file on the inflating thread as it goes. Random text
// barely compresses, so its file spans several of the reader's 2 MB reads, and
// the inflate must wait on, and resume after, every one of them.
TEST(ArrivingText, OpenInflatesAGzipFileWhileReadingIt) {
  std::string text;
  uint64_t x = 88172645463325252ull;
  while (text.size() < (size_t{7} << 20)) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    text.push_back(static_cast<char>('a' + x % 26));
  }
  const std::string gz = gzip_of(text);
  ASSERT_GT(gz.size(), size_t{4} << 20);
  fs::path file = scratch_file("random.gz", gz);
  auto stream = ArrivingText::open(file);
  EXPECT_TRUE(stream->inflating());
  EXPECT_EQ(stream->file_bytes(), gz.size());
  auto done = stream->finish();
  EXPECT_TRUE(done.streamed);
  EXPECT_EQ(done.text.view(), text);
  fs::remove(file);

  // A real trace: the same events as the whole-text path.
  fs::path h200 = fs::path(MAGPIE_SHARED_TRACES) / kH200;
  PaddedBuffer h200_gz = read_file(h200);
  trace::Trace whole = trace::parse_kineto(gunzip(h200_gz.view(), kH200), kH200, {});
  auto opened = ArrivingText::open(h200);
  expect_same_trace(whole, trace::parse_kineto(*opened, kH200, {}));
}

TEST(ArrivingText, OpenFallsBackToTheOneShotPathForOddGzipFiles) {
  // A second member after the first: the one-shot path joins them.
  fs::path two = scratch_file("two.gz", gzip_of("{\"traceEvents\": [") + gzip_of("]}"));
  auto both = ArrivingText::open(two);
  auto done = both->finish();
  EXPECT_FALSE(done.streamed);
  EXPECT_EQ(done.text.view(), "{\"traceEvents\": []}");
  fs::remove(two);
  // Cut short: the one-shot path's error, naming the file.
  std::string gz = gzip_of(std::string(200000, 'x') + "tail");
  gz.resize(gz.size() / 2);
  fs::path cut = scratch_file("cut.json.gz", gz);
  auto stream = ArrivingText::open(cut);
  try {
    stream->finish();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find(cut.filename().string()), std::string::npos) << e.what();
  }
  fs::remove(cut);
  // Not gzip: read as it is.
  fs::path plain = scratch_file("plain.json", "{\"traceEvents\": []}");
  auto read = ArrivingText::open(plain);
  EXPECT_FALSE(read->inflating());
  EXPECT_EQ(read->finish().text.view(), "{\"traceEvents\": []}");
  fs::remove(plain);
  // Missing: read()'s error.
  try {
    ArrivingText::open("/nonexistent/magpie/trace.json.gz");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

TEST(ArrivingText, MissingFileIsNotFoundAndDirectoryIsUnreadable) {
  try {
    ArrivingText::read("/nonexistent/magpie/trace.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  try {
    ArrivingText::read(fs::temp_directory_path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnreadable);
  }
}

TEST(TraceLoader, GzipWithoutEventArrayIsNotAProfilerTrace) {
  fs::path dir = fs::temp_directory_path() / "magpie_stream_test";
  fs::create_directories(dir);
  fs::path file = dir / "notatrace.json.gz";
  std::string gz = gzip_of(R"({"hello": [1, 2, 3], "world": {"x": "y"}})");
  { std::ofstream(file, std::ios::binary).write(gz.data(), static_cast<std::streamsize>(gz.size())); }
  try {
    trace::load_trace(file, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("traceEvents"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(StringPool, ManyLongStringsThatDifferInTheMiddleStayDistinctAcrossGrowth) {
  trace::StringPool pool;
  std::string base(300, 'a');
  std::vector<trace::StringId> ids;
  for (int i = 0; i < 2000; ++i) {  // same length, prefix and suffix; the index grows twice
    std::string s = base;
    std::memcpy(s.data() + 50, std::to_string(i).c_str(), std::to_string(i).size());
    ids.push_back(pool.intern(s));
  }
  for (int i = 0; i < 2000; ++i) {
    std::string s = base;
    std::memcpy(s.data() + 50, std::to_string(i).c_str(), std::to_string(i).size());
    ASSERT_EQ(pool.intern(s), ids[static_cast<size_t>(i)]);
    ASSERT_EQ(pool.find(s), ids[static_cast<size_t>(i)]);
    ASSERT_EQ(pool.view(ids[static_cast<size_t>(i)]), s);
  }
  EXPECT_EQ(pool.size(), 2001u);  // + the empty string
  EXPECT_EQ(pool.find(""), trace::kEmptyString);
  EXPECT_EQ(pool.find(std::string(300, 'b')), trace::StringPool::kNotInterned);
}

}  // namespace
}  // namespace magpie
