#include "serve/sessions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::serve {

namespace {

// Common English words: one token each, with their leading space, in the
// usual BPE vocabularies, so a turn of N words is close to N tokens.
constexpr std::array<const char*, 128> kWords = {
    "the",   "of",    "and",   "to",    "in",    "is",    "was",   "that",  "for",   "on",
    "are",   "with",  "as",    "his",   "they",  "be",    "at",    "one",   "have",  "this",
    "from",  "or",    "had",   "by",    "word",  "but",   "what",  "some",  "we",    "can",
    "out",   "other", "were",  "all",   "there", "when",  "up",    "use",   "your",  "how",
    "said",  "an",    "each",  "she",   "which", "do",    "their", "time",  "if",    "will",
    "way",   "about", "many",  "then",  "them",  "write", "would", "like",  "so",    "these",
    "her",   "long",  "make",  "thing", "see",   "him",   "two",   "has",   "look",  "more",
    "day",   "could", "go",    "come",  "did",   "number", "sound", "no",   "most",  "people",
    "my",    "over",  "know",  "water", "than",  "call",  "first", "who",   "may",   "down",
    "side",  "been",  "now",   "find",  "any",   "new",   "work",  "part",  "take",  "get",
    "place", "made",  "live",  "where", "after", "back",  "little", "only", "round", "man",
    "year",  "came",  "show",  "every", "good",  "me",    "give",  "our",   "under", "name",
    "very",  "through", "just", "form", "great", "think", "say",   "help"};

std::string random_words(int64_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, kWords.size() - 1);
  std::string out;
  for (int64_t i = 0; i < n; ++i) {
    if (i) out.push_back(' ');
    out += kWords[pick(rng)];
  }
  return out;
}

}  // namespace

double ThinkTime::draw(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::kConstant:
      return a;
    case Kind::kExponential:
      return a > 0 ? std::exponential_distribution<double>(1.0 / a)(rng) : 0.0;
    case Kind::kUniform:
      return std::uniform_real_distribution<double>(a, b)(rng);
  }
  return 0;
}

ThinkTime parse_think_time(const std::string& text, const std::string& what) {
  auto fail = [&] {
    return Error(ErrorKind::kUsage, fmt::format("{} '{}' is not a think time", what, text), what,
                 std::nullopt,
                 "seconds between a reply and the next turn: 0.5 (constant), exp:0.5 (exponential "
                 "with that mean) or uniform:0.2,0.8");
  };
  auto number = [&](const std::string& s) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      throw fail();
    }
    if (used != s.size() || !std::isfinite(v) || v < 0) throw fail();
    return v;
  };
  ThinkTime t;
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    t.a = number(text);
    return t;
  }
  const std::string kind = text.substr(0, colon), rest = text.substr(colon + 1);
  if (kind == "constant") {
    t.a = number(rest);
  } else if (kind == "exp" || kind == "exponential") {
    t.kind = ThinkTime::Kind::kExponential;
    t.a = number(rest);
  } else if (kind == "uniform") {
    auto comma = rest.find(',');
    if (comma == std::string::npos) throw fail();
    t.kind = ThinkTime::Kind::kUniform;
    t.a = number(rest.substr(0, comma));
    t.b = number(rest.substr(comma + 1));
    if (t.b < t.a) throw fail();
  } else {
    throw fail();
  }
  return t;
}

Prompt session_turn_prompt(const std::vector<ChatMessage>& history, int64_t output_len) {
  Prompt p;
  p.messages = history;
  p.output_len = output_len;
  // Completions: the history as one text. A reply is appended as it came, so
  // the previous request's prompt and reply are this one's prefix byte for byte.
  for (const auto& m : history) {
    if (m.role != "assistant" && !p.text.empty()) p.text.push_back('\n');
    p.text += m.content;
  }
  p.prompt_len = estimate_text_tokens(p.text);
  return p;
}

std::vector<Session> synthetic_sessions(const SyntheticSessionOptions& o) {
  if (o.turns < 1 || o.new_tokens < 1 || o.output_len < 1)
    throw Error(ErrorKind::kUsage, "a session needs at least one turn, one new token and one output token");
  std::mt19937_64 rng(o.seed);
  auto lo_hi = [&](int64_t len) {
    auto lo = static_cast<int64_t>(static_cast<double>(len) * (1 - o.range_ratio));
    auto hi = static_cast<int64_t>(static_cast<double>(len) * (1 + o.range_ratio));
    return std::uniform_int_distribution<int64_t>(std::max<int64_t>(1, lo), std::max<int64_t>(1, hi));
  };
  auto in_dist = lo_hi(o.new_tokens);
  auto out_dist = lo_hi(o.output_len);
  const std::string system = o.system_prompt_len > 0 ? random_words(o.system_prompt_len, rng) : "";
  std::vector<Session> sessions(o.num_sessions);
  for (auto& s : sessions) {
    s.system_prompt = system;
    for (int64_t t = 0; t < o.turns; ++t) {
      SessionTurn turn;
      turn.new_tokens = in_dist(rng);
      turn.text = random_words(turn.new_tokens, rng);
      turn.output_len = out_dist(rng);
      turn.think_s = t == 0 ? 0.0 : o.think_time.draw(rng);
      s.turns.push_back(std::move(turn));
    }
  }
  return sessions;
}

std::vector<Session> agentic_sessions(const AgenticSessionOptions& o) {
  auto at_least = [](int64_t v, int64_t min, const char* key) {
    if (v < min)
      throw Error(ErrorKind::kUsage, fmt::format("client.agent.{} is {}; it must be at least {}", key, v, min));
  };
  at_least(o.turns, 1, "turns (--turns)");
  at_least(o.system_prompt_len, 0, "system_prompt_len");
  at_least(o.context_len, 1, "context_len");
  at_least(o.tool_result_len, 1, "tool_result_len");
  at_least(o.tool_call_len, 1, "tool_call_len");
  at_least(o.subagents, 0, "subagents");
  at_least(o.subagent_turns, 1, "subagent_turns");
  at_least(o.spawn_after_turn, 0, "spawn_after_turn");
  if (o.subagents > 0 && o.spawn_after_turn >= o.turns)
    throw Error(ErrorKind::kUsage,
                fmt::format("client.agent.spawn_after_turn {} is not one of a parent's {} turns (0-based)",
                            o.spawn_after_turn, o.turns),
                "", std::nullopt, "lower it, or raise client.turns");
  std::mt19937_64 rng(o.seed);
  auto draw_len = [&](int64_t len) {
    auto lo = static_cast<int64_t>(static_cast<double>(len) * (1 - o.range_ratio));
    auto hi = static_cast<int64_t>(static_cast<double>(len) * (1 + o.range_ratio));
    return std::uniform_int_distribution<int64_t>(std::max<int64_t>(1, lo), std::max<int64_t>(1, hi))(rng);
  };
  auto turn = [&](const std::string& head, int64_t len, bool first) {
    SessionTurn t;
    t.new_tokens = draw_len(len);
    t.text = head + random_words(t.new_tokens, rng);
    t.output_len = o.output_len ? *o.output_len : draw_len(o.tool_call_len);
    t.think_s = first ? 0.0 : o.think_time.draw(rng);
    return t;
  };
  const std::string system = o.system_prompt_len > 0 ? random_words(o.system_prompt_len, rng) : "";
  std::vector<Session> out;
  for (size_t i = 0; i < o.num_sessions; ++i) {
    Session parent;
    parent.system_prompt = system;
    parent.turns.push_back(turn(fmt::format("Task {}. Repository context:\n", i), o.context_len, true));
    for (int64_t t = 1; t < o.turns; ++t)
      parent.turns.push_back(turn(fmt::format("Tool result {}:\n", t), o.tool_result_len, false));
    const auto parent_index = static_cast<int64_t>(out.size());
    out.push_back(std::move(parent));
    for (int64_t a = 0; a < o.subagents; ++a) {
      Session sub;
      sub.parent = parent_index;
      sub.spawn_after_turn = static_cast<size_t>(o.spawn_after_turn);
      sub.turns.push_back(turn(fmt::format("Sub-agent {}: take part {} of the task.\n", a, a), o.tool_result_len, true));
      for (int64_t t = 1; t < o.subagent_turns; ++t)
        sub.turns.push_back(turn(fmt::format("Tool result {}:\n", t), o.tool_result_len, false));
      out.push_back(std::move(sub));
    }
  }
  return out;
}

ShareGptSessions sharegpt_sessions(const std::filesystem::path& path, const ShareGptSessionOptions& o) {
  auto buffer = read_file(path);
  auto j = nlohmann::json::parse(buffer.view(), nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw Error(ErrorKind::kBadFormat, "ShareGPT dataset must be a JSON list of conversations",
                path.string());
  ShareGptSessions out;
  std::mt19937_64 think_rng(o.seed + 1);
  for (const auto& entry : j) {
    auto c = entry.find("conversations");
    if (c == entry.end() || !c->is_array()) {
      ++out.skipped_without_user_turn;
      continue;
    }
    Session s;
    for (size_t i = 0; i < c->size(); ++i) {
      const auto& m = (*c)[i];
      if (!m.is_object() || !m.contains("value") || !m["value"].is_string()) continue;
      const std::string from = m.value("from", "");
      const auto& value = m["value"].get_ref<const std::string&>();
      if (from == "system") {
        if (s.turns.empty()) s.system_prompt = value;
        continue;
      }
      if (from != "human" && from != "user") continue;
      if (o.max_turns > 0 && static_cast<int64_t>(s.turns.size()) >= o.max_turns) break;
      SessionTurn turn;
      turn.text = value;
      turn.new_tokens = estimate_text_tokens(value);
      // The recorded reply, when there is one, gives the turn's length.
      turn.output_len = 128;
      if (i + 1 < c->size() && (*c)[i + 1].is_object() && (*c)[i + 1].contains("value") &&
          (*c)[i + 1]["value"].is_string() && (*c)[i + 1].value("from", "") != "human" &&
          (*c)[i + 1].value("from", "") != "user")
        turn.output_len = estimate_text_tokens((*c)[i + 1]["value"].get_ref<const std::string&>());
      if (o.output_len) turn.output_len = *o.output_len;
      turn.think_s = s.turns.empty() ? 0.0 : o.think_time.draw(think_rng);
      s.turns.push_back(std::move(turn));
    }
    if (s.turns.empty()) {
      ++out.skipped_without_user_turn;
      continue;
    }
    out.sessions.push_back(std::move(s));
  }
  if (o.seed != 0) {
    std::mt19937_64 rng(o.seed);
    std::shuffle(out.sessions.begin(), out.sessions.end(), rng);
  }
  if (o.num_sessions != 0 && out.sessions.size() > o.num_sessions) out.sessions.resize(o.num_sessions);
  if (out.sessions.empty())
    throw Error(ErrorKind::kBadFormat, "no conversation with a user turn in the ShareGPT dataset",
                path.string(), std::nullopt,
                "each entry needs \"conversations\": [{\"from\": \"human\", \"value\": ...}, ...]");
  return out;
}

}  // namespace magpie::serve
