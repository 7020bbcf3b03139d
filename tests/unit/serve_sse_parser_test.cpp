// SSE parser: every framing a server (or a proxy) may produce, fed whole,
// byte by byte and in random splits — the events must not change.
#include <gtest/gtest.h>

#include <random>

#include "serve/openai_stream.hpp"
#include "serve/sse_parser.hpp"

namespace magpie::serve {
namespace {

std::vector<SseEvent> parse_whole(std::string_view s, SseParser* p = nullptr) {
  SseParser local;
  if (!p) p = &local;
  std::vector<SseEvent> out;
  p->feed(s, Clock::now(), out);
  return out;
}

std::vector<std::string> datas(const std::vector<SseEvent>& evs) {
  std::vector<std::string> d;
  for (const auto& e : evs) d.push_back(e.data);
  return d;
}

// Feeds `s` split at the given cut points.
std::vector<std::string> parse_split(std::string_view s, const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<SseEvent> out;
  size_t prev = 0;
  for (size_t c : cuts) {
    p.feed(s.substr(prev, c - prev), Clock::now(), out);
    prev = c;
  }
  p.feed(s.substr(prev), Clock::now(), out);
  return datas(out);
}

const std::string kStream =
    "\xEF\xBB\xBF"
    ": ping\r\n\r\n"
    "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
    "data:{\"choices\":[{\"text\":\"b\"}]}\r\n\r\n"
    "event: message\rdata: line1\rdata: line2\r\r"
    ":comment only\n\n"
    "id: 7\nretry: 10\ndata:  two-spaces\n\n"
    "data\n\n"
    "data: [DONE]\n\n";

const std::vector<std::string> kExpected = {"{\"choices\":[{\"text\":\"a\"}]}",
                                            "{\"choices\":[{\"text\":\"b\"}]}",
                                            "line1\nline2",
                                            " two-spaces",
                                            "",
                                            "[DONE]"};

TEST(SseParser, WholeStream) {
  SseParser p;
  auto evs = parse_whole(kStream, &p);
  EXPECT_EQ(datas(evs), kExpected);
  EXPECT_EQ(evs[2].event, "message");
  EXPECT_FALSE(p.has_partial());
}

TEST(SseParser, ByteByByte) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(parse_split(kStream, cuts), kExpected);
}

TEST(SseParser, RandomSplits) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<size_t> cuts;
    std::uniform_int_distribution<size_t> d(0, kStream.size());
    size_t n = rng() % 12;
    for (size_t i = 0; i < n; ++i) cuts.push_back(d(rng));
    std::sort(cuts.begin(), cuts.end());
    ASSERT_EQ(parse_split(kStream, cuts), kExpected) << "trial " << trial;
  }
}

TEST(SseParser, CrLfSplitBetweenReads) {
  // "\r" ends a read and "\n" starts the next: one terminator, not two.
  EXPECT_EQ(parse_split("data: x\r\n\r\ndata: y\r\n\r\n", {8, 10}),
            (std::vector<std::string>{"x", "y"}));
}

TEST(SseParser, NoLineLengthLimit) {
  std::string big(4 << 20, 'x');  // 4 MiB in one line, 32× aiohttp's limit
  std::string s = "data: " + big + "\n\n";
  std::vector<size_t> cuts;
  for (size_t c = 1000; c < s.size(); c += 65536) cuts.push_back(c);
  auto got = parse_split(s, cuts);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], big);
}

TEST(SseParser, PartialEventAtEndIsReported) {
  SseParser p;
  auto evs = parse_whole("data: {\"choices\":[]}\n\ndata: {\"cho", &p);
  EXPECT_EQ(evs.size(), 1u);
  EXPECT_TRUE(p.has_partial());
  SseParser q;
  parse_whole("data: complete\n", &q);  // line ended, event not dispatched
  EXPECT_TRUE(q.has_partial());
}

TEST(SseParser, FirstByteTimeIsThatOfTheEventsFirstRead) {
  SseParser p;
  std::vector<SseEvent> out;
  auto t1 = Clock::time_point(std::chrono::seconds(1));
  auto t2 = Clock::time_point(std::chrono::seconds(2));
  auto t3 = Clock::time_point(std::chrono::seconds(3));
  p.feed(": ping\n\nda", t1, out);
  p.feed("ta: a\n\ndata: b", t2, out);
  p.feed("\n\n", t3, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first_byte, t1);  // first byte of "data: a" arrived at t1
  EXPECT_EQ(out[1].first_byte, t2);
}

TEST(SseParser, BomLikePrefixThatIsNotABom) {
  // 0xEF then ordinary bytes: held-back bytes are content.
  auto got = parse_split(
      "\xEF"
      "data: x\n\n",
      {1});
  EXPECT_TRUE(got.empty());  // field name "\xEFdata" is unknown, so nothing dispatches
  EXPECT_EQ(parse_split("\xEF\xBB\xBF"
                        "data: x\n\n",
                        {1, 2, 3}),
            (std::vector<std::string>{"x"}));
}

// --- OpenAI stream interpretation -------------------------------------------

RequestRecord run_stream(const std::string& s, bool transport_closed_cleanly = true) {
  SseParser p;
  OpenAiStreamReader r;
  std::vector<SseEvent> evs;
  auto t0 = Clock::now();
  // One event per read, 1 ms apart.
  size_t pos = 0;
  int k = 1;
  while (pos < s.size()) {
    size_t end = s.find("\n\n", pos);
    end = end == std::string::npos ? s.size() : end + 2;
    p.feed(std::string_view(s).substr(pos, end - pos), t0 + std::chrono::milliseconds(k++), evs);
    pos = end;
  }
  for (auto& e : evs) r.on_event(e);
  RequestRecord rec;
  r.finish(t0, p.has_partial(), rec);
  (void)transport_closed_cleanly;
  return rec;
}

TEST(OpenAiStream, CompletionTimingAndUsage) {
  auto rec = run_stream(
      "data: {\"choices\":[{\"text\":\"He\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\"llo\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\"!\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n");
  EXPECT_TRUE(rec.success);
  EXPECT_NEAR(rec.ttft, 0.001, 1e-9);
  EXPECT_NEAR(rec.latency, 0.003, 1e-9);  // usage chunk and [DONE] do not count
  ASSERT_EQ(rec.itl.size(), 2u);
  EXPECT_NEAR(rec.itl[0], 0.001, 1e-9);
  EXPECT_EQ(rec.output_tokens, 3);
  EXPECT_EQ(rec.usage_prompt_tokens, 5);
  EXPECT_EQ(rec.output_chars, 6u);
}

TEST(OpenAiStream, ChatContentReasoning) {
  auto rec = run_stream(
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"reasoning\":\"ok\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"yes\"}}]}\n\n"
      "data: [DONE]\n\n");
  EXPECT_TRUE(rec.success);
  EXPECT_EQ(rec.output_chars, 8u);
  EXPECT_EQ(rec.itl.size(), 3u);
  // The first reasoning text at 2 ms, the first answer text at 4 ms; TTFT is the first chunk's (the role's).
  EXPECT_NEAR(rec.ttft, 0.001, 1e-9);
  EXPECT_NEAR(rec.first_reasoning_s, 0.002, 1e-9);
  EXPECT_NEAR(rec.first_content_s, 0.004, 1e-9);
  EXPECT_EQ(rec.reasoning_chunks, 2);
  EXPECT_EQ(rec.reasoning_tokens, -1);  // no usage sent
}

// usage.completion_tokens_details.reasoning_tokens is the count when sent; a
// stream without reasoning has none of it.
TEST(OpenAiStream, ReasoningTokensFromUsage) {
  auto rec = run_stream(
      "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"a b\"}}],\"usage\":null}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3,\"completion_tokens_details\":"
      "{\"reasoning_tokens\":2}}}\n\n"
      "data: [DONE]\n\n");
  EXPECT_TRUE(rec.success);
  EXPECT_EQ(rec.reasoning_tokens, 2);
  EXPECT_EQ(rec.output_tokens, 3);
  EXPECT_NEAR(rec.first_content_s, 0.002, 1e-9);
  auto plain = run_stream("data: {\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":1,"
                          "\"completion_tokens_details\":null}}\n\ndata: [DONE]\n\n");
  EXPECT_TRUE(plain.success);
  EXPECT_EQ(plain.reasoning_chunks, 0);
  EXPECT_EQ(plain.first_reasoning_s, -1);
  EXPECT_NEAR(plain.first_content_s, 0.001, 1e-9);
}

TEST(OpenAiStream, MidStreamErrorIsAFailure) {
  auto rec = run_stream(
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
      "data: {\"error\":{\"message\":\"KV cache exhausted\",\"code\":500}}\n\n"
      "data: [DONE]\n\n");
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure, FailureReason::kStreamError);
  EXPECT_EQ(rec.error, "KV cache exhausted");
}

TEST(OpenAiStream, ClosedWithoutDoneIsAFailure) {
  auto rec = run_stream("data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
  EXPECT_FALSE(rec.success);
  EXPECT_EQ(rec.failure, FailureReason::kIncompleteStream);
  auto mid = run_stream("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"cho");
  EXPECT_EQ(mid.failure, FailureReason::kIncompleteStream);
  EXPECT_NE(mid.error.find("mid-event"), std::string::npos);
}

TEST(OpenAiStream, MalformedAndEmpty) {
  EXPECT_EQ(run_stream("data: not json\n\ndata: [DONE]\n\n").failure, FailureReason::kMalformedSse);
  EXPECT_EQ(run_stream("data: [DONE]\n\n").failure, FailureReason::kNoChunks);
}

TEST(OpenAiStream, ContinuousUsageGivesTokensPerChunk) {
  auto rec = run_stream(
      "data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":1}}\n\n"
      "data: {\"choices\":[{\"text\":\"bc\"}],\"usage\":{\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n");
  ASSERT_EQ(rec.chunk_tokens.size(), 2u);
  EXPECT_EQ(rec.chunk_tokens[1], 2);
}

}  // namespace
}  // namespace magpie::serve
