// Workloads beyond single prompts (issue 30): multi-turn sessions (synthetic
// and ShareGPT), their think times and history, a Mooncake trace replayed on
// its timestamps (same hash id → same token block), and the registry's rule
// that a knob a workload cannot honour is refused, never dropped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/dataset.hpp"
#include "serve/recorded_trace.hpp"
#include "serve/request_builder.hpp"
#include "serve/sessions.hpp"
#include "serve/workload.hpp"

namespace magpie::serve {
namespace {

namespace fs = std::filesystem;

fs::path write_temp(const std::string& name, const std::string& text) {
  auto dir = fs::temp_directory_path() / "magpie_workload_test";
  fs::create_directories(dir);
  auto p = dir / name;
  std::ofstream(p) << text;
  return p;
}

template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::kInternal, "none");
}

TEST(MooncakeTrace, SameHashIdIsTheSameBlockAndTimestampsBecomeTheSchedule) {
  auto p = write_temp("trace.jsonl",
                      R"({"timestamp": 1000, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}
{"timestamp": 1500, "input_length": 512, "output_length": 3, "hash_ids": [7]}

{"timestamp": 1250, "input_length": 700, "output_length": 4, "hash_ids": [9, 8]}
)");
  auto requests = read_mooncake_trace(p);
  ASSERT_EQ(requests.size(), 3u);
  TraceReplayOptions o;
  o.speedup = 2;
  auto replay = mooncake_replay(requests, o);
  // Sorted by time; offsets from the first, divided by the speed-up.
  ASSERT_EQ(replay.offsets_s, (std::vector<double>{0.0, 0.125, 0.25}));
  const auto& a = replay.prompts[0].token_ids;  // [7, 8] → 600 tokens
  const auto& c = replay.prompts[1].token_ids;  // [9, 8] → 700 tokens (188 past the blocks)
  const auto& b = replay.prompts[2].token_ids;  // [7] → 512 tokens
  ASSERT_EQ(a.size(), 600u);
  ASSERT_EQ(b.size(), 512u);
  ASSERT_EQ(c.size(), 700u);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));           // block 7 is shared
  EXPECT_TRUE(std::equal(a.begin() + 512, a.end(), c.begin() + 512));  // block 8's first 88 tokens
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + 512, c.begin()));  // block 9 is not block 7
  EXPECT_EQ(replay.prompts[0].output_len, 5);
  o.output_len = 2;  // --output-len wins over the recorded lengths
  for (const auto& prompt : mooncake_replay(requests, o).prompts) EXPECT_EQ(prompt.output_len, 2);
}

TEST(MooncakeTrace, BadLinesNameTheFileAndLine) {
  auto malformed = write_temp("bad1.jsonl", "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, "
                                            "\"hash_ids\": [1]}\n\n{not json\n");
  auto e = error_of([&] { read_mooncake_trace(malformed); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
  EXPECT_NE(std::string(e.what()).find("bad1.jsonl:3"), std::string::npos) << e.what();
  auto missing = write_temp("bad2.jsonl", "{\"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n");
  e = error_of([&] { read_mooncake_trace(missing); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
  EXPECT_NE(std::string(e.what()).find("bad2.jsonl:1"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("input_length"), std::string::npos) << e.what();
  auto bad_id = write_temp("bad3.jsonl",
                           "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [\"x\"]}\n");
  e = error_of([&] { read_mooncake_trace(bad_id); });
  EXPECT_NE(std::string(e.what()).find("hash_ids"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([&] { read_mooncake_trace("/nonexistent/trace.jsonl"); }).kind(), ErrorKind::kNotFound);
}

TEST(TimedJsonl, TimestampsBecomeTheScheduleAndAMissingOneIsNamed) {
  auto p = write_temp("timed.jsonl", R"({"timestamp": 300, "prompt": "b c", "max_tokens": 3}
{"timestamp": 100, "prompt_token_ids": [5, 6, 7], "output_len": 9}
)");
  ClientOptions o;
  o.dataset = "timed_jsonl";
  o.dataset_path = p.string();
  o.trace_speedup = 4;
  WorkloadCase w;
  auto wl = make_workload(o, w, 320);  // no NUM_PROMPTS given: the whole file
  ASSERT_EQ(wl.schedule_s, (std::vector<double>{0.0, 0.05}));
  EXPECT_EQ(wl.prompts[0].token_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(wl.prompts[0].output_len, 9);
  EXPECT_EQ(wl.prompts[1].text, "b c");
  auto missing = write_temp("untimed.jsonl", "{\"timestamp\": 1, \"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
  o.dataset_path = missing.string();
  auto e = error_of([&] { make_workload(o, w, 1); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
  EXPECT_NE(std::string(e.what()).find("untimed.jsonl:2"), std::string::npos) << e.what();
  // A JSONL value of the wrong type is named at its line (it used to escape as a JSON library error).
  auto bad = write_temp("badlen.jsonl", "{\"prompt\": \"a\", \"max_tokens\": \"many\"}\n");
  e = error_of([&] { jsonl_dataset(bad, {}); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
  EXPECT_NE(std::string(e.what()).find("badlen.jsonl:1"), std::string::npos) << e.what();
}

TEST(ThinkTime, FormsAndRefusals) {
  std::mt19937_64 rng(1);
  EXPECT_EQ(parse_think_time("0.5", "--think-time").draw(rng), 0.5);
  EXPECT_EQ(parse_think_time("constant:2", "--think-time").draw(rng), 2.0);
  auto u = parse_think_time("uniform:0.2,0.4", "--think-time");
  for (int i = 0; i < 100; ++i) {
    double x = u.draw(rng);
    EXPECT_GE(x, 0.2);
    EXPECT_LT(x, 0.4);
  }
  auto ex = parse_think_time("exp:1", "--think-time");
  double sum = 0;
  for (int i = 0; i < 4000; ++i) sum += ex.draw(rng);
  EXPECT_NEAR(sum / 4000, 1.0, 0.1);
  for (const char* bad : {"fast", "-1", "uniform:0.5", "uniform:0.8,0.2", "exp:", "gamma:1"}) {
    auto e = error_of([&] { parse_think_time(bad, "--think-time"); });
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad;
    EXPECT_NE(std::string(e.what()).find("--think-time"), std::string::npos) << e.what();
  }
}

TEST(Sessions, SyntheticSessionsShareOneSystemPromptAndHaveTheirTurns) {
  SyntheticSessionOptions o;
  o.num_sessions = 3;
  o.turns = 4;
  o.new_tokens = 12;
  o.output_len = 7;
  o.system_prompt_len = 30;
  o.think_time = parse_think_time("0.25", "t");
  o.seed = 3;
  auto sessions = synthetic_sessions(o);
  ASSERT_EQ(sessions.size(), 3u);
  for (const auto& s : sessions) {
    EXPECT_EQ(s.system_prompt, sessions[0].system_prompt);
    ASSERT_EQ(s.turns.size(), 4u);
    EXPECT_EQ(s.turns[0].think_s, 0.0);  // the first turn is sent on arrival
    for (size_t t = 0; t < s.turns.size(); ++t) {
      EXPECT_EQ(s.turns[t].output_len, 7);
      EXPECT_EQ(s.turns[t].new_tokens, 12);
      EXPECT_EQ(std::count(s.turns[t].text.begin(), s.turns[t].text.end(), ' '), 11);  // 12 words
      if (t) {
        EXPECT_EQ(s.turns[t].think_s, 0.25);
      }
    }
  }
  EXPECT_EQ(std::count(sessions[0].system_prompt.begin(), sessions[0].system_prompt.end(), ' '), 29);
  EXPECT_NE(sessions[0].turns[0].text, sessions[1].turns[0].text);
}

TEST(Sessions, EveryTurnSendsTheWholeHistoryWithTheRepliesAsTheyCame) {
  std::vector<ChatMessage> h{{"system", "be brief"}, {"user", "hello there"}, {"assistant", " hi you"},
                             {"user", "and now"}};
  auto p = session_turn_prompt(h, 9);
  // Completions: the previous prompt plus its reply is this prompt's prefix, byte for byte.
  auto previous = session_turn_prompt({h[0], h[1]}, 9);
  EXPECT_EQ(p.text.rfind(previous.text + " hi you", 0), 0u) << p.text;
  EXPECT_EQ(p.text, "be brief\nhello there hi you\nand now");
  RequestOptions chat;
  chat.api = ApiKind::kChat;
  auto body = nlohmann::json::parse(build_request_body(p, chat));
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][2]["role"], "assistant");
  EXPECT_EQ(body["messages"][2]["content"], " hi you");
  EXPECT_EQ(body["max_completion_tokens"], 9);
  auto completion = nlohmann::json::parse(build_request_body(p, RequestOptions{}));
  EXPECT_EQ(completion["prompt"], p.text);
  EXPECT_EQ(completion["max_tokens"], 9);
}

TEST(Sessions, ShareGptConversationsKeepEveryUserTurn) {
  auto p = write_temp("sessions.json", R"([
  {"conversations": [{"from": "system", "value": "You are terse."},
                     {"from": "human", "value": "first question here please"},
                     {"from": "gpt", "value": "a reply that is forty characters long..."},
                     {"from": "human", "value": "second question"},
                     {"from": "gpt", "value": "short"},
                     {"from": "human", "value": "third, with no reply recorded"}]},
  {"conversations": [{"from": "gpt", "value": "a reply with no question"}]},
  {"conversations": [{"from": "human", "value": "only turn"}, {"from": "gpt", "value": "ok then"}]}
])");
  ShareGptSessionOptions o;
  auto read = sharegpt_sessions(p, o);
  ASSERT_EQ(read.sessions.size(), 2u);
  EXPECT_EQ(read.skipped_without_user_turn, 1u);
  const auto& s = read.sessions[0];
  EXPECT_EQ(s.system_prompt, "You are terse.");
  ASSERT_EQ(s.turns.size(), 3u);
  EXPECT_EQ(s.turns[1].text, "second question");
  EXPECT_EQ(s.turns[0].output_len, 10);  // the recorded reply's chars/4
  o.output_len = 4;                      // --output-len: every turn's max_tokens
  o.max_turns = 2;
  read = sharegpt_sessions(p, o);
  ASSERT_EQ(read.sessions[0].turns.size(), 2u);
  for (const auto& t : read.sessions[0].turns) EXPECT_EQ(t.output_len, 4);
  auto none = write_temp("none.json", R"([{"conversations": [{"from": "gpt", "value": "x"}]}])");
  auto e = error_of([&] { sharegpt_sessions(none, {}); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
  EXPECT_NE(std::string(e.what()).find("none.json"), std::string::npos);
}

BenchmarkConfig flags_config(const BenchmarkFlags& f) {
  BenchmarkConfig c;
  c.endpoint = "http://127.0.0.1:1";
  apply_flags(c, f, false);
  return c;
}

TEST(WorkloadRegistry, AKnobTheWorkloadCannotHonourIsRefused) {
  auto refused = [](BenchmarkFlags f, const std::string& needle) {
    auto e = error_of([&] { validate(flags_config(f)); });
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  };
  BenchmarkFlags f;
  f.dataset = "sharegpt";
  f.dataset_path = "x.json";
  f.prefix_len = 64;  // used to be dropped silently for a file dataset
  refused(f, "--prefix-len");
  f.prefix_len.reset();
  f.token_id_max = 4000;
  refused(f, "--token-id-max");
  BenchmarkFlags r;
  r.turns = 3;
  refused(r, "--turns");  // random prompts have no turns
  BenchmarkFlags m;
  m.dataset = "mooncake";
  m.dataset_path = "t.jsonl";
  m.request_rate = "5";
  refused(m, "--request-rate");
  m.request_rate.reset();
  EXPECT_NO_THROW(validate(flags_config(m)));
  BenchmarkFlags s;
  s.dataset = "synthetic_sessions";
  s.duration = 10;
  refused(s, "--duration");
  s.duration.reset();
  s.trace_speedup = 2;
  refused(s, "--trace-speedup");
  BenchmarkFlags u;
  u.dataset = "sessions";
  refused(u, "synthetic_sessions");  // the names are listed
}

TEST(WorkloadRegistry, MagpiesLengthKnobsOnAFileDatasetAreWarnedAbout) {
  BenchmarkFlags f;
  f.dataset = "sharegpt";
  f.dataset_path = "x.json";
  f.input_len = "128";
  f.range_ratio = "0.2";
  auto c = flags_config(f);
  auto warnings = check_workload_knobs(c.client, c.cases());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ISL (--input-len) and RANDOM_RANGE_RATIO"), std::string::npos) << warnings[0];
}

TEST(WorkloadRegistry, SessionKeysFromYamlAndFlags) {
  auto c = parse_benchmark_yaml(
      "model: m\nclient:\n  dataset: synthetic_sessions\n  turns: 5\n  system_prompt_len: 100\n"
      "  think_time: exp:0.5\n  session_header: X-Session-ID\n  session_concurrency: 3\n  num_sessions: 7\n",
      "b.yaml");
  EXPECT_TRUE(c.unknown_keys.empty());
  EXPECT_EQ(c.client.sessions.turns, 5);
  EXPECT_EQ(c.client.sessions.system_prompt_len, 100);
  EXPECT_EQ(c.client.sessions.think_time, "exp:0.5");
  EXPECT_EQ(c.client.sessions.header, "X-Session-ID");
  EXPECT_EQ(c.client.sessions.concurrency, 3);
  EXPECT_EQ(c.client.sessions.num_sessions, 7);
  auto w = c.cases().front();
  w.input_len = 8;
  w.output_len = 2;
  auto workload = make_workload(c.client, w, 100);
  EXPECT_EQ(workload.sessions.size(), 7u);  // num_sessions wins over the case's count
  EXPECT_EQ(workload.planned_requests(), 35u);
  auto e = error_of([] { parse_benchmark_yaml("model: m\nclient:\n  think_time: soon\n", "b.yaml"); });
  EXPECT_NE(std::string(e.what()).find("b.yaml:3"), std::string::npos) << e.what();
  BenchmarkFlags f;
  f.think_time = "uniform:1";
  EXPECT_EQ(error_of([&] { flags_config(f); }).kind(), ErrorKind::kUsage);
}

TEST(PrefixPool, ReuseIsExactPoolUsedEvenlyAndSeeded) {
  auto a = assign_pool_prefixes(50, 4, 0.8, 7);
  ASSERT_EQ(a.size(), 50u);
  std::vector<int> uses(4, 0);
  size_t own = 0;
  for (auto x : a) x < 0 ? ++own : ++uses[static_cast<size_t>(x)];
  EXPECT_EQ(own, 10u);  // exactly round(0.2 * 50) prompts have a prefix of their own
  EXPECT_EQ(uses, (std::vector<int>{10, 10, 10, 10}));
  EXPECT_EQ(assign_pool_prefixes(50, 4, 0.8, 7), a);  // deterministic for a seed
  EXPECT_NE(assign_pool_prefixes(50, 4, 0.8, 8), a);
  for (auto x : assign_pool_prefixes(9, 2, 0.0, 1)) EXPECT_EQ(x, -1);
  for (auto x : assign_pool_prefixes(9, 2, 1.0, 1)) EXPECT_GE(x, 0);
  EXPECT_EQ(error_of([] { assign_pool_prefixes(9, 0, 0.5, 1); }).kind(), ErrorKind::kUsage);
  EXPECT_EQ(error_of([] { assign_pool_prefixes(9, 2, 1.5, 1); }).kind(), ErrorKind::kUsage);
}

TEST(PrefixPool, PromptsShareTheirPoolPrefixAndExpectedHitRateCountsLaterUses) {
  RandomDatasetOptions o;
  o.num_prompts = 40;
  o.input_len = 16;
  o.output_len = 4;
  o.prefix_len = 64;
  o.prefix_pool = 4;
  o.prefix_reuse = 0.75;
  o.token_id_max = 4000;
  o.seed = 3;
  auto ps = random_dataset(o);
  auto a = assign_pool_prefixes(40, 4, 0.75, 3);
  auto head = [](const Prompt& p) { return std::vector<int32_t>(p.token_ids.begin(), p.token_ids.begin() + 64); };
  std::vector<std::vector<int32_t>> pool(4);
  std::vector<std::vector<int32_t>> own;
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_EQ(ps[i].prompt_len, 80);  // every prompt as long, whatever its prefix
    if (a[i] < 0) {
      own.push_back(head(ps[i]));
      continue;
    }
    auto& p = pool[static_cast<size_t>(a[i])];
    if (p.empty()) p = head(ps[i]);
    EXPECT_EQ(head(ps[i]), p) << i;
  }
  ASSERT_EQ(own.size(), 10u);
  for (const auto& h : own)
    for (const auto& p : pool) EXPECT_NE(h, p);
  EXPECT_NE(own[0], own[1]);
  // 30 pool uses, 4 of them first uses: 26 · 64 of 40 · 80 tokens; a warm-up of
  // prompt 0 (when it uses the pool) makes its prefix's first use a hit too.
  EXPECT_DOUBLE_EQ(expected_prefix_hit_rate(ps, a, 64, std::nullopt), 26.0 * 64 / (40 * 80));
  double warm = a[0] >= 0 ? 27.0 * 64 / (40 * 80) : 26.0 * 64 / (40 * 80);
  EXPECT_DOUBLE_EQ(expected_prefix_hit_rate(ps, a, 64, 0), warm);
  // No pool: one prefix on every prompt, as --prefix-len always did.
  o.prefix_pool = 0;
  auto single = random_dataset(o);
  for (const auto& p : single) EXPECT_EQ(head(p), head(single[0]));
}

TEST(PrefixPool, KeysFromYamlAndFlagsAndWhatIsRefused) {
  auto c = parse_benchmark_yaml("model: m\nclient:\n  prefix_len: 128\n  prefix_pool: 3\n  prefix_reuse: 0.5\n",
                                "b.yaml");
  EXPECT_TRUE(c.unknown_keys.empty());
  EXPECT_EQ(c.client.prefix_pool, 3);
  EXPECT_DOUBLE_EQ(c.client.prefix_reuse, 0.5);
  auto w = c.cases().front();
  w.input_len = 8;
  w.range_ratio = 0;
  c.client.warmups = 0;
  auto workload = make_workload(c.client, w, 10);
  ASSERT_TRUE(workload.prefix);
  EXPECT_EQ(workload.prefix->reusing, 5u);
  EXPECT_DOUBLE_EQ(workload.prefix->expected_hit_rate, 2.0 * 128 / (10 * 136));
  auto e = error_of([] { parse_benchmark_yaml("model: m\nclient:\n  prefix_reuse: 1.2\n", "b.yaml"); });
  EXPECT_NE(std::string(e.what()).find("b.yaml:3"), std::string::npos) << e.what();
  BenchmarkFlags f;
  f.prefix_reuse = -0.1;
  EXPECT_NE(std::string(error_of([&] { flags_config(f); }).what()).find("--prefix-reuse"), std::string::npos);
  auto refused = [](BenchmarkFlags g, const std::string& needle) {
    auto err = error_of([&] { validate(flags_config(g)); });
    EXPECT_EQ(err.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
  };
  BenchmarkFlags g;
  g.prefix_reuse = 0.5;
  refused(g, "--prefix-reuse");  // without a pool there is nothing to reuse
  g.prefix_pool = 2;
  refused(g, "--prefix-pool");  // without --prefix-len the prefixes have no length
  g.prefix_len = 64;
  EXPECT_NO_THROW(validate(flags_config(g)));
  g.dataset = "synthetic_sessions";
  g.prefix_len.reset();
  refused(g, "--prefix-pool");
}

// The shipped recipe, expanded: parents of `turns` turns, each followed by its
// sub-agents; word counts within their ranges; one system prompt everywhere.
TEST(AgenticCoding, TheShippedRecipeExpandsIntoParentsAndSubAgents) {
  auto c = load_benchmark_yaml(fs::path(MAGPIE_SOURCE_DIR) / "examples/recipes/agentic_coding.yaml");
  EXPECT_TRUE(c.unknown_keys.empty());
  EXPECT_EQ(c.client.dataset, "agentic_coding");
  EXPECT_TRUE(check_workload_knobs(c.client, c.cases()).empty());
  const auto& a = c.client.agent;
  auto w = c.cases().front();
  auto workload = make_workload(c.client, w, static_cast<size_t>(w.num_prompts));
  const auto& ss = workload.sessions;
  const size_t parents = static_cast<size_t>(c.client.sessions.num_sessions);
  const size_t per = 1 + static_cast<size_t>(a.subagents);
  ASSERT_EQ(ss.size(), parents * per);
  EXPECT_EQ(workload.planned_requests(),
            parents * static_cast<size_t>(c.client.sessions.turns + a.subagents * a.subagent_turns));
  auto within = [](int64_t n, int64_t len, double r) {
    return n >= static_cast<int64_t>(static_cast<double>(len) * (1 - r)) &&
           n <= static_cast<int64_t>(static_cast<double>(len) * (1 + r));
  };
  auto words = [](const std::string& text) {  // after the turn's one-line head
    auto body = text.substr(text.find('\n') + 1);
    return static_cast<int64_t>(std::count(body.begin(), body.end(), ' ') + 1);
  };
  for (size_t i = 0; i < ss.size(); ++i) {
    const auto& s = ss[i];
    const bool parent = i % per == 0;
    EXPECT_EQ(s.parent, parent ? -1 : static_cast<int64_t>(i - i % per)) << i;
    if (parent) {
      EXPECT_EQ(s.system_prompt, ss[0].system_prompt);
      EXPECT_EQ(std::count(s.system_prompt.begin(), s.system_prompt.end(), ' ') + 1, c.client.sessions.system_prompt_len);
      ASSERT_EQ(static_cast<int64_t>(s.turns.size()), c.client.sessions.turns);
    } else {
      EXPECT_EQ(s.spawn_after_turn, static_cast<size_t>(a.spawn_after_turn));
      ASSERT_EQ(static_cast<int64_t>(s.turns.size()), a.subagent_turns);
    }
    for (size_t t = 0; t < s.turns.size(); ++t) {
      const auto& turn = s.turns[t];
      const int64_t len = parent && t == 0 ? a.context_len : a.tool_result_len;
      EXPECT_TRUE(within(turn.new_tokens, len, a.range_ratio)) << i << "/" << t << ": " << turn.new_tokens;
      EXPECT_EQ(words(turn.text), turn.new_tokens) << i << "/" << t;
      EXPECT_TRUE(within(turn.output_len, a.tool_call_len, a.range_ratio)) << turn.output_len;
      EXPECT_EQ(turn.think_s == 0, t == 0) << i << "/" << t;  // exp:0.5 draws are never exactly 0
    }
  }
  // The same seed gives the same sessions; another seed, others.
  auto again = make_workload(c.client, w, static_cast<size_t>(w.num_prompts));
  for (size_t i = 0; i < ss.size(); ++i) EXPECT_EQ(again.sessions[i].turns[1].text, ss[i].turns[1].text);
  auto other = c.client;
  other.seed = 2;
  EXPECT_NE(make_workload(other, w, 1).sessions[0].turns[0].text, ss[0].turns[0].text);
  // A given OSL is every turn's max_tokens.
  w.output_len = 5;
  w.output_len_given = true;
  for (const auto& s : make_workload(c.client, w, 1).sessions)
    for (const auto& t : s.turns) EXPECT_EQ(t.output_len, 5);
}

TEST(AgenticCoding, KeysAreCheckedAndAgentKeysElsewhereAreRefused) {
  auto c = parse_benchmark_yaml("model: m\nclient:\n  dataset: agentic_coding\n  num_sessions: 2\n  turns: 3\n"
                                "  agent: {context_len: 10, tool_result_len: 5, tool_call_len: 4, subagents: 3,\n"
                                "          subagent_turns: 2, spawn_after_turn: 2, range_ratio: 0}\n",
                                "b.yaml");
  EXPECT_TRUE(c.unknown_keys.empty());
  auto w = c.cases().front();
  auto ss = make_workload(c.client, w, 100).sessions;
  ASSERT_EQ(ss.size(), 8u);  // 2 parents x (1 + 3 sub-agents)
  EXPECT_EQ(ss[0].turns[0].new_tokens, 10);
  EXPECT_EQ(ss[1].turns[1].new_tokens, 5);
  EXPECT_EQ(ss[5].parent, 4);
  EXPECT_EQ(ss[5].spawn_after_turn, 2u);
  // Sub-agents after a turn the parent does not have.
  auto late = c.client;
  late.agent.spawn_after_turn = 3;
  auto e = error_of([&] { make_workload(late, w, 1); });
  EXPECT_NE(std::string(e.what()).find("spawn_after_turn 3"), std::string::npos) << e.what();
  auto negative = error_of([] { parse_benchmark_yaml("model: m\nclient:\n  agent: {subagents: -1}\n", "b.yaml"); });
  EXPECT_NE(std::string(negative.what()).find("client.agent.subagents"), std::string::npos) << negative.what();
  auto r = parse_benchmark_yaml("model: m\nclient:\n  agent: {subagents: 1}\n", "b.yaml");
  auto refused = error_of([&] { check_workload_knobs(r.client, r.cases()); });
  EXPECT_NE(std::string(refused.what()).find("client.agent does not apply to dataset random"), std::string::npos)
      << refused.what();
}

}  // namespace
}  // namespace magpie::serve
