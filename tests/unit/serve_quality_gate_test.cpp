// The accuracy gate's settings (quality: and the public envs) and its report
// block (serve/quality_gate.hpp) over an lm_eval folder laid out as lm-eval
// writes it (<model>/results_<time>.json, samples_<task>_<time>.jsonl).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/quality_gate.hpp"

namespace magpie::serve {
namespace {

namespace fs = std::filesystem;

TEST(QualitySettings, EnvsAndSection) {
  auto off = parse_benchmark_yaml("benchmark:\n  model: m\n", "q.yaml").quality_settings();
  EXPECT_FALSE(off.requested);
  auto envs = parse_benchmark_yaml(R"(benchmark:
  model: m
  envs: {RUN_EVAL: "true", MAGPIE_EVAL_TASKS: "a, b", MAGPIE_EVAL_LIMIT: 7}
)", "q.yaml").quality_settings();
  EXPECT_TRUE(envs.requested);
  EXPECT_EQ(envs.tasks, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(envs.limit, 7);
  EXPECT_EQ(envs.model_type, "local-completions");
  // The section wins over the envs; chat API → the chat model.
  auto both = parse_benchmark_yaml(R"(benchmark:
  model: m
  envs: {RUN_EVAL: 1, MAGPIE_EVAL_TASKS: a}
  client: {api: chat}
  quality: {tasks: [c], num_fewshot: 0, limit: 3}
)", "q.yaml").quality_settings();
  EXPECT_EQ(both.tasks, std::vector<std::string>{"c"});
  EXPECT_EQ(both.num_fewshot, 0);
  EXPECT_EQ(both.model_type, "local-chat-completions");
  auto argv = lm_eval_argv(both, "/x/lm_eval", "http://127.0.0.1:8000", "tiny", "/ws/lm_eval");
  EXPECT_EQ(argv[2], "local-chat-completions");
  EXPECT_NE(argv[4].find("base_url=http://127.0.0.1:8000/v1/chat/completions"), std::string::npos) << argv[4];
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--log_samples"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--apply_chat_template"), argv.end());
  // Bad values are usage errors naming the key.
  auto bad = parse_benchmark_yaml("benchmark:\n  model: m\n  envs: {RUN_EVAL: maybe}\n", "q.yaml");
  try {
    (void)bad.quality_settings();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("RUN_EVAL"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_benchmark_yaml("benchmark:\n  model: m\n  quality: {model: hf}\n", "q.yaml"), Error);
}

TEST(QualitySettings, MissingLmEvalNamesTheFix) {
  QualitySettings s;
  s.requested = true;
  s.lm_eval = "/nonexistent/lm_eval";
  try {
    (void)resolve_lm_eval(s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("pip install 'lm-eval[api]'"), std::string::npos) << e.what();
  }
}

TEST(QualityGateJson, ReceiptsAndPrimaryMetric) {
  fs::path ws = fs::temp_directory_path() / ("magpie_qgate_" + std::to_string(::getpid()));
  fs::create_directories(ws / "lm_eval" / "tiny");
  EXPECT_EQ(quality_gate_json(ws, true)["status"], "missing");
  EXPECT_EQ(quality_gate_json(ws, false)["status"], "not_requested");
  std::ofstream(ws / "lm_eval" / "tiny" / "results_2026-12-06T06-41-50.1.json")
      << R"({"results": {"tiny_words": {"alias": "tiny_words", "exact_match,none": 0.75,
           "exact_match_stderr,none": 0.1}}})";
  std::ofstream(ws / "lm_eval" / "tiny" / "samples_tiny_words_2026-12-06T06-41-50.1.jsonl") << "abc";
  auto gate = quality_gate_json(ws, true);
  EXPECT_EQ(gate["status"], "passed");
  EXPECT_EQ(gate["passed"], true);
  EXPECT_EQ(gate["tasks"]["tiny_words"]["primary_metric"], "exact_match,none");
  EXPECT_DOUBLE_EQ(gate["tasks"]["tiny_words"]["value"].get<double>(), 0.75);
  EXPECT_FALSE(gate["tasks"]["tiny_words"]["metrics"].contains("exact_match_stderr,none"));
  ASSERT_EQ(gate["sample_artifact_receipts"].size(), 1u);
  const auto& r = gate["sample_artifact_receipts"][0];
  EXPECT_EQ(r["path"], "lm_eval/tiny/samples_tiny_words_2026-12-06T06-41-50.1.jsonl");
  EXPECT_EQ(r["size_bytes"], 3);
  // sha256("abc"), FIPS 180-2's example.
  EXPECT_EQ(r["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(gate["result_artifact_receipts"].size(), 1u);
  EXPECT_TRUE(gate["sample_set_digest"].is_string());
  EXPECT_TRUE(gate["outcome_digest"].is_string());
  fs::remove_all(ws);
}

}  // namespace
}  // namespace magpie::serve
