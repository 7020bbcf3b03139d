#pragma once
// Multi-turn sessions: conversations whose every turn sends the whole history
// (the system prompt, each user message and the model's own previous replies),
// so a server's prefix cache sees the context grow turn by turn. Synthetic
// sessions are made of common English words (about one token each in BPE
// vocabularies; the server's usage.prompt_tokens gives the exact count);
// ShareGPT sessions take every human turn of a conversation.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "serve/dataset.hpp"

namespace magpie::serve {

// Think time between a reply and the session's next turn, in seconds:
// "0.5" (constant), "exp:0.5" (exponential with that mean) or "uniform:0.2,0.8".
struct ThinkTime {
  enum class Kind { kConstant, kExponential, kUniform };
  Kind kind = Kind::kConstant;
  double a = 0, b = 0;  // constant: a; exponential: mean a; uniform: [a, b]
  double draw(std::mt19937_64& rng) const;
};
// Throws Error(kUsage) naming `what` (the flag or key) and the accepted forms.
ThinkTime parse_think_time(const std::string& text, const std::string& what);

struct SessionTurn {
  std::string text;        // the user's new message
  int64_t new_tokens = 0;  // its length (words, or chars/4 for ShareGPT)
  int64_t output_len = 0;  // max_tokens
  double think_s = 0;      // wait after the previous reply before this turn is sent
};

struct Session {
  std::string system_prompt;  // empty = none
  std::vector<SessionTurn> turns;
  // A sub-agent (parent >= 0, an earlier session): starts when the parent's
  // turn `spawn_after_turn` has its reply, with the parent's whole history so
  // far as its own first messages, so it shares the parent's prefix (its
  // system_prompt is unused). Not started when the parent fails before then.
  int64_t parent = -1;
  size_t spawn_after_turn = 0;
};

// The request a turn sends: chat messages, and for the completions API the
// same history as one text whose replies continue their prompts byte for byte.
Prompt session_turn_prompt(const std::vector<ChatMessage>& history, int64_t output_len);

struct SyntheticSessionOptions {
  size_t num_sessions = 0;
  int64_t turns = 4;
  int64_t new_tokens = 64;  // user words per turn
  int64_t output_len = 64;  // per turn
  double range_ratio = 0;   // lengths uniform in [len·(1−r), len·(1+r)]
  int64_t system_prompt_len = 0;  // words of one system prompt shared by every session
  ThinkTime think_time;
  uint64_t seed = 0;
};
std::vector<Session> synthetic_sessions(const SyntheticSessionOptions& options);

// Coding-agent sessions (dataset agentic_coding): one system prompt (the
// agent's instructions) shared by every session; a first turn with the task
// and the repository context; then tool results as the new messages of each
// later turn, each answered by a short, tool-call-sized output; and sub-agents
// that start after a parent's turn with the parent's history as their prefix.
// Lengths are words (about one token each), uniform within ±range_ratio.
struct AgenticSessionOptions {
  size_t num_sessions = 0;          // parent sessions; each adds `subagents` more
  int64_t turns = 8;                // a parent's turns
  int64_t system_prompt_len = 1500;
  int64_t context_len = 4000;       // the first turn's task and repository context
  int64_t tool_result_len = 400;    // each later turn's new message
  int64_t tool_call_len = 48;       // every turn's max_tokens (± range_ratio)
  std::optional<int64_t> output_len;  // given (OSL): every turn's max_tokens, exactly
  int64_t subagents = 2;
  int64_t subagent_turns = 3;
  int64_t spawn_after_turn = 1;     // 0-based parent turn after whose reply the sub-agents start
  double range_ratio = 0.5;
  ThinkTime think_time;             // tool latency between a reply and the next turn
  uint64_t seed = 0;
};
// Parents and their sub-agents in one list, each parent followed by its own.
std::vector<Session> agentic_sessions(const AgenticSessionOptions& options);

struct ShareGptSessionOptions {
  size_t num_sessions = 0;            // 0 = all
  int64_t max_turns = 0;              // 0 = every human turn
  std::optional<int64_t> output_len;  // overrides each reply's length
  ThinkTime think_time;
  uint64_t seed = 0;  // shuffle seed; 0 keeps file order
};
struct ShareGptSessions {
  std::vector<Session> sessions;
  size_t skipped_without_user_turn = 0;
};
// Every human turn of each conversation ("from": "human"/"user"); a "system"
// entry becomes the system prompt; each recorded reply's length (chars/4) is
// that turn's max_tokens unless output_len is given.
ShareGptSessions sharegpt_sessions(const std::filesystem::path& path,
                                   const ShareGptSessionOptions& options);

}  // namespace magpie::serve
