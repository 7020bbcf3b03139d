// lm-eval sample files paired by item (store/quality_samples.hpp): files in
// lm-eval's own line format (doc_id, doc_hash, filter, metrics, one value per
// metric), written here so each case's counts are known.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "store/quality_samples.hpp"

namespace magpie::store {
namespace {

namespace fs = std::filesystem;

class QualitySamplesTest : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("magpie_quality_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }

  // One line per item: item i is right when right(i).
  template <typename Right>
  fs::path write(const std::string& name, int items, Right right, const std::string& metric = "exact_match",
                 const std::string& filter = "none", int first_id = 0) {
    fs::create_directories(dir / name);
    fs::path f = dir / name / "samples_tiny_words_2026-12-06T06-41-50.123456.jsonl";
    std::ofstream out(f);
    for (int i = first_id; i < first_id + items; ++i)
      out << R"({"doc_id": )" << i << R"(, "doc_hash": "h)" << i << R"(", "filter": ")" << filter
          << R"(", "metrics": [")" << metric << R"("], ")" << metric << R"(": )" << (right(i) ? "1.0" : "0.0")
          << "}\n";
    return f;
  }
};

TEST(QualityTaskName, StripsPrefixAndTimestamp) {
  EXPECT_EQ(quality_task_from_file_name("samples_arc_easy_2026-01-02T03-04-05.678901.jsonl"), "arc_easy");
  EXPECT_EQ(quality_task_from_file_name("samples_gsm8k.jsonl"), "gsm8k");
}

TEST_F(QualitySamplesTest, SameAnswersAreSame) {
  auto a = read_quality_samples(write("a", 40, [](int i) { return i % 3 != 0; }));
  auto b = read_quality_samples(write("b", 40, [](int i) { return i % 3 != 0; }));
  EXPECT_EQ(a.task, "tiny_words");
  EXPECT_EQ(a.metric, "exact_match");
  EXPECT_EQ(a.filter, "none");
  auto c = compare_quality_samples(a, b);
  EXPECT_EQ(c.paired.verdict, stats::QualityVerdict::kSame);
  EXPECT_EQ(c.paired.counts.pairs(), 40u);
  EXPECT_DOUBLE_EQ(c.paired.ci_low, 0);
  EXPECT_DOUBLE_EQ(c.paired.ci_high, 0);
}

TEST_F(QualitySamplesTest, ThirtyLostItemsAreWorse) {
  auto a = read_quality_samples(write("a", 100, [](int) { return true; }));
  auto b = read_quality_samples(write("b", 100, [](int i) { return i >= 30; }));
  auto c = compare_quality_samples(a, b);
  EXPECT_EQ(c.paired.verdict, stats::QualityVerdict::kWorse);
  EXPECT_EQ(c.paired.counts.baseline_only, 30u);
  EXPECT_NEAR(c.paired.difference, -0.30, 1e-12);
  // And the other way round, BETTER.
  EXPECT_EQ(compare_quality_samples(b, a).paired.verdict, stats::QualityVerdict::kBetter);
}

TEST_F(QualitySamplesTest, UnpairedDocIdsAreListed) {
  auto a = read_quality_samples(write("a", 10, [](int) { return true; }));
  auto b = read_quality_samples(write("b", 10, [](int) { return true; }, "exact_match", "none", 8));
  auto c = compare_quality_samples(a, b);
  EXPECT_EQ(c.paired.counts.pairs(), 2u);  // doc_ids 8 and 9
  EXPECT_EQ(c.only_in_baseline.size(), 8u);
  EXPECT_EQ(c.only_in_candidate.size(), 8u);
  EXPECT_EQ(c.only_in_candidate.front(), "10");
}

TEST_F(QualitySamplesTest, DifferentTasksAreRefused) {
  auto a = read_quality_samples(write("a", 5, [](int) { return true; }));
  fs::path other = dir / "samples_arc_easy_2026-12-06T06-41-50.1.jsonl";
  fs::copy_file(write("b", 5, [](int) { return true; }), other);
  auto b = read_quality_samples(other);
  try {
    compare_quality_samples(a, b);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("different tasks (tiny_words vs arc_easy)"), std::string::npos) << e.what();
  }
}

TEST_F(QualitySamplesTest, DifferentItemsUnderOneIdAreRefused) {
  auto a = read_quality_samples(write("a", 5, [](int) { return true; }));
  fs::path f = write("b", 5, [](int) { return true; });
  std::ofstream(f) << R"({"doc_id": 0, "doc_hash": "other", "filter": "none", "exact_match": 1})" << "\n";
  try {
    compare_quality_samples(a, read_quality_samples(f));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("doc_id 0 is a different item"), std::string::npos) << e.what();
  }
}

TEST_F(QualitySamplesTest, FilterAndMetricChoice) {
  fs::path f = dir / "samples_gsm_2026-12-06T06-41-50.1.jsonl";
  std::ofstream(f) << R"({"doc_id": 0, "filter": "strict-match", "metrics": ["exact_match"], "exact_match": 0.0})"
                   << "\n"
                   << R"({"doc_id": 0, "filter": "flexible-extract", "metrics": ["exact_match"], "exact_match": 1.0})"
                   << "\n";
  EXPECT_EQ(read_quality_samples(f).filter, "strict-match");
  EXPECT_FALSE(read_quality_samples(f).items.at("0").correct);
  EXPECT_TRUE(read_quality_samples(f, "", "flexible-extract").items.at("0").correct);
}

TEST_F(QualitySamplesTest, BadLinesNameTheFileAndLine) {
  fs::path f = dir / "samples_bleu_2026-12-06T06-41-50.1.jsonl";
  std::ofstream(f) << R"({"doc_id": 0, "metrics": ["acc"], "acc": 1})" << "\n"
                   << R"({"doc_id": 1, "metrics": ["acc"], "acc": 0.37})" << "\n";
  try {
    read_quality_samples(f);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_quality_samples(dir / "missing.jsonl"), Error);
}

// A serving workspace whose report lists `samples` (relative to it) with their sha256.
void write_gate_report(const fs::path& ws, const std::vector<fs::path>& samples) {
  std::string receipts;
  for (const auto& rel : samples)
    receipts += (receipts.empty() ? "" : ",") + std::string(R"({"path": ")") + rel.generic_string() +
                R"(", "size_bytes": 1, "sha256": ")" + file_sha256(ws / rel) + "\"}";
  std::ofstream(ws / "benchmark_report.json")
      << R"({"quality_gate": {"kind": "lm_eval", "sample_artifact_receipts": [)" << receipts << "]}}";
}

TEST_F(QualitySamplesTest, GatesOfTwoWorkspacesAreComparedAndReceiptsChecked) {
  for (const char* side : {"a", "b"}) fs::create_directories(dir / side / "lm_eval");
  auto rel = [](const fs::path& f) { return fs::path("lm_eval") / f.filename(); };
  fs::path fa = write("a/lm_eval", 50, [](int) { return true; });
  fs::path fb = write("b/lm_eval", 50, [](int i) { return i >= 10; });
  write_gate_report(dir / "a", {rel(fa)});
  write_gate_report(dir / "b", {rel(fb)});
  std::vector<std::string> warnings;
  auto q = compare_quality_gates(dir / "a", dir / "b", warnings);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].task, "tiny_words");
  EXPECT_EQ(q[0].paired.verdict, stats::QualityVerdict::kWorse);
  EXPECT_TRUE(warnings.empty());
  // A sample file changed after the run no longer matches its receipt: not compared, said so.
  std::ofstream(fb, std::ios::app) << R"({"doc_id": 99, "exact_match": 1})" << "\n";
  warnings.clear();
  EXPECT_TRUE(compare_quality_gates(dir / "a", dir / "b", warnings).empty());
  ASSERT_EQ(warnings.size(), 2u);  // the changed file, then the task the candidate lacks now
  EXPECT_NE(warnings[0].find("no longer matches its sha256 receipt"), std::string::npos) << warnings[0];
  // Only one side with a gate: a warning, nothing compared.
  fs::remove(dir / "b" / "benchmark_report.json");
  std::ofstream(dir / "b" / "benchmark_report.json") << "{}";
  warnings.clear();
  EXPECT_TRUE(compare_quality_gates(dir / "a", dir / "b", warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("only"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace magpie::store
