#include "core/config_keys.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace magpie {
namespace {

const std::vector<std::string> kBenchmarkKeys = {"framework", "model", "precision", "gpu_selection",
                                                 "gpu_monitor", "profiler", "server_lifecycle"};

TEST(NearestKey, FindsOneEditTyposAndSwaps) {
  EXPECT_EQ(nearest_key("gpu_selecton", kBenchmarkKeys), "gpu_selection");
  EXPECT_EQ(nearest_key("gpu_moniter", kBenchmarkKeys), "gpu_monitor");
  EXPECT_EQ(nearest_key("modle", kBenchmarkKeys), "model");        // adjacent swap
  EXPECT_EQ(nearest_key("Framework", kBenchmarkKeys), "framework");  // case only
}

TEST(NearestKey, NoSuggestionForUnrelatedKeys) {
  EXPECT_FALSE(nearest_key("tokenizer", kBenchmarkKeys).has_value());
  EXPECT_FALSE(nearest_key("x", kBenchmarkKeys).has_value());
  EXPECT_FALSE(nearest_key("gpu_selection", {}).has_value());
}

TEST(UnknownKeyMessage, NamesFilePathAndSuggestion) {
  EXPECT_EQ(unknown_key_message("b.yaml", "benchmark.", "gpu_selecton", kBenchmarkKeys),
            "b.yaml: unknown key 'benchmark.gpu_selecton' ignored (did you mean 'gpu_selection'?)");
  EXPECT_EQ(unknown_key_message("b.yaml", "benchmark.", "tokenizer", kBenchmarkKeys),
            "b.yaml: unknown key 'benchmark.tokenizer' ignored");
}

TEST(RejectUnknownKeys, OnlyUnderStrict) {
  EXPECT_NO_THROW(reject_unknown_keys({"b.yaml: unknown key 'x' ignored"}, false, "b.yaml"));
  EXPECT_NO_THROW(reject_unknown_keys({}, true, "b.yaml"));
  try {
    reject_unknown_keys({"b.yaml: unknown key 'x' ignored", "b.yaml: unknown key 'y' ignored"}, true, "b.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("2 unknown key(s)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
  }
}

TEST(ConfigValueError, NamesFileLineColumnPathExpectationAndValue) {
  Error e = config_value_error({"b.yaml", 11, 12}, "gap_analysis.top_k", "a positive integer", "twenty",
                               "e.g. top_k: 20");
  EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  EXPECT_EQ(exit_code_for(e.kind()), 2);
  EXPECT_EQ(std::string(e.what()),
            "b.yaml:11:12: gap_analysis.top_k: expected a positive integer, got 'twenty' — e.g. top_k: 20");
  // A flag's value has no line; a long or multi-line value is cut to one short line.
  Error f = config_value_error({"--env", 0, 0}, "CONC", "a positive integer", "many\nmore");
  EXPECT_EQ(std::string(f.what()), "--env: CONC: expected a positive integer, got 'many...'");
}

}  // namespace
}  // namespace magpie
