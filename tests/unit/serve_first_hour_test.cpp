// A new user's first serving runs: a YAML value of the wrong type named at its
// file, line, column and key path (exit 2); PORT/TP parsed once, guarded;
// random token ids fitted to the model's vocabulary read from its config.json
// (a local folder, the Hugging Face cache, the server's model card); a failed
// request shown in the server's own words; ShareGPT honouring --output-len.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/benchmark_runner.hpp"
#include "serve/engine_launcher.hpp"
#include "serve/http_client.hpp"
#include "serve/model_files.hpp"
#include "serve/request_record.hpp"
#include "serve/server_process.hpp"

namespace magpie::serve {
namespace {

namespace fs = std::filesystem;

// The error a YAML text raises (fails the test when it parses).
Error yaml_error(const std::string& text, const std::string& origin = "b.yaml") {
  try {
    parse_benchmark_yaml(text, origin);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "parsed without an error:\n" << text;
  return Error(ErrorKind::kInternal, "none");
}

bool has(const Error& e, const std::string& part) {
  return std::string(e.what()).find(part) != std::string::npos;
}

TEST(ServeConfigTypes, WrongTypeNamesFileLineColumnKeyPathExpectationAndValue) {
  const std::string yaml =
      "benchmark:\n"            // 1
      "  framework: vllm\n"     // 2
      "  model: m\n"            // 3
      "  gap_analysis:\n"       // 4
      "    top_k: twenty\n";    // 5: value at column 12
  Error e = yaml_error(yaml);
  EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  EXPECT_EQ(exit_code_for(e.kind()), 2);
  EXPECT_TRUE(has(e, "b.yaml:5:12: benchmark.gap_analysis.top_k: expected a positive integer, got 'twenty'"))
      << e.what();
  EXPECT_FALSE(has(e, "bad conversion")) << e.what();
  // Without the `benchmark:` wrapper the path is as written there.
  Error bare = yaml_error("model: m\ngap_analysis:\n  top_k: -3\n");
  EXPECT_TRUE(has(bare, "b.yaml:3:10: gap_analysis.top_k: expected a positive integer, got '-3'")) << bare.what();
}

TEST(ServeConfigTypes, EveryKindOfValueGoesThroughTheGuard) {
  struct Case {
    std::string yaml, path, expected, seen;
  };
  const std::vector<Case> cases = {
      {"model: m\nprofiler:\n  torch_profiler:\n    enabled: maybe\n", "profiler.torch_profiler.enabled",
       "true or false", "maybe"},
      {"model: m\ntimeout_seconds: soon\n", "timeout_seconds", "a number of 0 or more", "soon"},
      {"model: m\ngap_analysis: 5\n", "gap_analysis", "a mapping of keys", "5"},
      {"model: m\ngap_analysis:\n  trace_end_pct: 150\n", "gap_analysis.trace_end_pct", "a percentage", "150"},
      {"model: m\nclient:\n  seed: [1]\n", "client.seed", "an integer of 0 or more", "a list"},
      {"model: m\nclient:\n  api: grpc\n", "client.api", "completions or chat", "grpc"},
      {"model: m\nclient:\n  request_rate: fast\n", "client.request_rate", "requests/s", "fast"},
      {"model: m\nclient:\n  token_id_max: 0\n", "client.token_id_max", "a token id", "0"},
      {"model: m\ngpu_selection:\n  candidates: [0, x]\n", "gpu_selection.candidates[1]", "an integer", "x"},
      {"model: m\nprofiler:\n  gpu_monitor:\n    interval_sec: 0\n", "profiler.gpu_monitor.interval_sec",
       "a number above 0", "0"},
      {"model: m\nprofiler:\n  tracelens:\n    export_format: pdf\n", "profiler.tracelens.export_format",
       "csv, excel or both", "pdf"},
  };
  for (const auto& c : cases) {
    Error e = yaml_error(c.yaml);
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << c.yaml;
    EXPECT_TRUE(has(e, "b.yaml:")) << e.what();
    EXPECT_TRUE(has(e, c.path + ": expected " + c.expected)) << e.what();
    EXPECT_TRUE(has(e, "got '" + c.seen)) << e.what();
  }
}

TEST(ServeConfigTypes, EnvStyleKeysAreCheckedWhereTheFileIsKnown) {
  Error e = yaml_error(
      "benchmark:\n"
      "  model: m\n"
      "  envs:\n"
      "    CONC: 'many'\n");
  EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  EXPECT_TRUE(has(e, "b.yaml:4:11: benchmark.envs.CONC: expected a positive integer, got 'many'")) << e.what();
  // As written: a lower-case key is named lower-case.
  EXPECT_TRUE(has(yaml_error("model: m\nenvs:\n  osl: 0\n"), "envs.osl: expected a positive integer, got '0'"));
  EXPECT_TRUE(has(yaml_error("model: m\nenvs:\n  RANDOM_RANGE_RATIO: 1.5\n"), "envs.RANDOM_RANGE_RATIO: expected a ratio"));
  EXPECT_TRUE(has(yaml_error("model: m\nenvs:\n  PORT: 70000\n"), "envs.PORT: expected a port number from 1 to 65535"));
  Error sweep = yaml_error("model: m\nsweep_matrix:\n  cases:\n    - {CONC: 4}\n    - {CONC: 8, ISL: lots}\n");
  EXPECT_TRUE(has(sweep, "b.yaml:5:22: sweep_matrix.cases[1].ISL: expected a positive integer, got 'lots'"))
      << sweep.what();
  // Text-valued keys stay text.
  auto c = parse_benchmark_yaml("model: m\nenvs:\n  EXTRA_VLLM_ARGS: --enforce-eager\n  MAX_MODEL_LEN: 32k\n", "b.yaml");
  EXPECT_EQ(c.envs.at("MAX_MODEL_LEN"), "32k");
}

TEST(ServeConfigTypes, FlagValuesForEnvKeysAreCheckedToo) {
  auto usage = [](const BenchmarkFlags& f) {
    BenchmarkConfig c;
    try {
      apply_flags(c, f, false);
    } catch (const Error& e) {
      return std::string(e.kind() == ErrorKind::kUsage ? "usage: " : "other: ") + e.what();
    }
    return std::string("no error");
  };
  BenchmarkFlags env;
  env.envs = {"CONC=many"};
  EXPECT_EQ(usage(env).rfind("usage: --env: CONC: expected a positive integer, got 'many'", 0), 0u) << usage(env);
  BenchmarkFlags port;
  port.envs = {"PORT=eighty"};
  EXPECT_NE(usage(port).find("usage: --env: PORT: expected a port number"), std::string::npos) << usage(port);
  BenchmarkFlags isl;
  isl.input_len = "abc";
  EXPECT_NE(usage(isl).find("usage: --input-len: ISL: expected a positive integer"), std::string::npos);
  BenchmarkFlags tid;
  tid.token_id_max = -5;
  EXPECT_NE(usage(tid).find("usage: --token-id-max"), std::string::npos);
}

TEST(ServeConfigTypes, PortAndTpParsedOnceGuarded) {
  BenchmarkConfig c;
  c.model = "m";
  c.run_mode = "local";
  EXPECT_FALSE(c.port().has_value());
  EXPECT_EQ(c.tensor_parallel(), 1);
  c.envs["PORT"] = "8123";
  c.envs["TP"] = "2";
  EXPECT_EQ(c.port(), 8123);
  EXPECT_EQ(c.tensor_parallel(), 2);
  // A value set around the readers (an MCP argument) is a usage error naming
  // PORT, not `stoi` with the internal-error exit code.
  c.envs["PORT"] = "http";
  const auto ws = fs::temp_directory_path() / "magpie_first_hour_plan";
  try {
    plan_launch(c, ws);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(has(e, "PORT: expected a port number from 1 to 65535, got 'http'")) << e.what();
  }
  c.envs["PORT"] = "8123";
  c.envs["TP"] = "two";
  EXPECT_THROW(plan_launch(c, ws), Error);
}

fs::path fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("magpie_first_hour_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(ServeVocab, ReadFromALocalFolderTheHfCacheAndAModelCard) {
  auto local = fresh_dir("local");
  std::ofstream(local / "config.json") << R"({"model_type": "llama", "vocab_size": 512})";
  auto v = model_vocab(local.string(), "");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->size, 512);
  EXPECT_EQ(v->config_path, local / "config.json");

  // The HF cache: hub/models--org--name/refs/main names the snapshot.
  auto cache = fresh_dir("hfcache");
  auto repo = cache / "hub" / "models--org--tiny";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / "abc123");
  std::ofstream(repo / "refs" / "main") << "abc123";
  std::ofstream(repo / "snapshots" / "abc123" / "config.json")
      << R"({"text_config": {"vocab_size": 1000}, "model_type": "llava"})";
  auto cached = model_vocab("org/tiny", cache.string());
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->size, 1000);
  EXPECT_FALSE(model_vocab("org/absent", cache.string()));
  EXPECT_FALSE(model_vocab("", cache.string()));

  // A server's /v1/models entry: vLLM's root is the path it was started with.
  nlohmann::json card{{"id", "served-name"}, {"root", local.string()}};
  auto from_card = model_vocab_from_card(card, cache.string());
  ASSERT_TRUE(from_card);
  EXPECT_EQ(from_card->size, 512);
  EXPECT_FALSE(model_vocab_from_card(nlohmann::json{{"id", "served-name"}}, cache.string()));
}

TEST(ServeVocab, DefaultIdsFitTheVocabAGivenBoundAboveItIsRefused) {
  ClientOptions o;  // default ids [100, 30000)
  auto t = fit_token_ids(o, 512, "m/config.json");
  EXPECT_EQ(o.token_id_max, 512);
  EXPECT_EQ(o.token_id_min, 100);
  EXPECT_EQ(t.max, 512);
  EXPECT_EQ(t.vocab_size, 512);
  EXPECT_EQ(t.vocab_from, "m/config.json");

  ClientOptions tiny;
  fit_token_ids(tiny, 64, "x");
  EXPECT_EQ(tiny.token_id_max, 64);
  EXPECT_LT(tiny.token_id_min, tiny.token_id_max);

  ClientOptions given;
  given.token_id_max = 30000;
  given.token_id_max_given = true;
  try {
    fit_token_ids(given, 512, "m/config.json");
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(has(e, "vocab_size 512")) << e.what();
    EXPECT_TRUE(has(e, "--token-id-max 512 or less")) << e.what();
  }
  given.token_id_max = 400;
  fit_token_ids(given, 512, "m/config.json");
  EXPECT_EQ(given.token_id_max, 400);

  ClientOptions unknown;
  auto u = fit_token_ids(unknown, std::nullopt, "");
  EXPECT_EQ(unknown.token_id_max, 30000);
  EXPECT_FALSE(u.vocab_size);
}

TEST(ServeFailureLine, TheServersOwnWordsOnOneLineWithTheFix) {
  RequestRecord stream;
  stream.failure = FailureReason::kStreamError;
  stream.error = "Token id 29785 is out of vocabulary";
  auto line = failure_line(stream);
  EXPECT_EQ(line.rfind("Token id 29785 is out of vocabulary — ", 0), 0u) << line;
  EXPECT_NE(line.find("--token-id-max"), std::string::npos) << line;

  RequestRecord http;
  http.failure = FailureReason::kHttpStatus;
  http.error = R"(HTTP 400: {"error": {"message": "This model's maximum context length is 2048 tokens.\nPlease reduce", "type": "BadRequestError"}})";
  EXPECT_EQ(failure_line(http), "HTTP 400: This model's maximum context length is 2048 tokens. Please reduce");

  RequestRecord cut;
  cut.failure = FailureReason::kHttpStatus;
  cut.error = "HTTP 500: {\"error\": {\"mess";  // a body cut at 500 characters stays as it came
  EXPECT_EQ(failure_line(cut), cut.error);
}

TEST(ServeDataset, ShareGptHonoursAGivenOutputLength) {
  auto dir = fresh_dir("sharegpt");
  auto sg = dir / "sharegpt.json";
  std::ofstream(sg) << R"([{"conversations":[{"from":"human","value":"Tell me a story about a cat please"},
    {"from":"gpt","value":"Once upon a time there was a cat who liked to sleep all day long."}]}])";
  BenchmarkConfig c = parse_benchmark_yaml("model: m\nclient:\n  dataset: sharegpt\n", "b.yaml");
  c.client.dataset_path = sg.string();
  auto without = c.cases().front();
  EXPECT_FALSE(without.output_len_given);
  EXPECT_EQ(case_prompts(c.client, without, 1).front().output_len, 16);  // the reply's ~chars/4
  BenchmarkFlags f;
  f.output_len = "4";
  BenchmarkConfig inline_config;
  inline_config.client = c.client;
  apply_flags(inline_config, f, false);
  auto with = inline_config.cases().front();
  EXPECT_TRUE(with.output_len_given);
  EXPECT_EQ(case_prompts(inline_config.client, with, 1).front().output_len, 4);
}

TEST(ServeHttp, ARefusedConnectionIsSaidAsSuch) {
  Endpoint e;
  e.port = static_cast<uint16_t>(free_port());  // nothing listens there now
  auto r = http_request(e, "GET", "/health", "", std::chrono::seconds(5));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.refused) << r.error;
  EXPECT_FALSE(r.unresolved);
}

}  // namespace
}  // namespace magpie::serve
