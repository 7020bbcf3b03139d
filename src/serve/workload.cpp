#include "serve/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "serve/recorded_trace.hpp"

namespace magpie::serve {

namespace {

Workload random_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  RandomDatasetOptions r;
  r.num_prompts = count;
  r.input_len = w.input_len;
  r.output_len = w.output_len;
  r.range_ratio = w.range_ratio;
  r.prefix_len = o.prefix_len;
  r.prefix_pool = o.prefix_pool;
  r.prefix_reuse = o.prefix_reuse;
  r.token_id_min = o.token_id_min;
  r.token_id_max = o.token_id_max;
  r.seed = o.seed;
  Workload out;
  out.prompts = random_dataset(r);
  if (o.prefix_pool > 0) {
    auto assignment = assign_pool_prefixes(count, o.prefix_pool, o.prefix_reuse, o.seed);
    PrefixPlan plan;
    plan.pool = o.prefix_pool;
    plan.prefix_len = o.prefix_len;
    plan.target_reuse = o.prefix_reuse;
    plan.requests = count;
    plan.reusing = static_cast<size_t>(std::count_if(assignment.begin(), assignment.end(), [](int64_t a) { return a >= 0; }));
    // Warm-ups send the first prompt, so its prefix is cached before the measured requests.
    plan.expected_hit_rate = expected_prefix_hit_rate(out.prompts, assignment, o.prefix_len,
                                                      o.warmups != 0 ? std::optional<size_t>(0) : std::nullopt);
    out.prefix = plan;
  }
  return out;
}

FileDatasetOptions file_options(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  FileDatasetOptions f;
  f.num_prompts = count;
  f.seed = o.seed;
  // A given output length (--output-len, OSL) is every request's max_tokens;
  // without one, each record's own length (the ShareGPT reply's, JSONL's output_len).
  if (w.output_len_given) f.output_len = w.output_len;
  return f;
}

Workload sharegpt_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  return {sharegpt_dataset(o.dataset_path, file_options(o, w, count)), {}, {}, {}};
}

Workload jsonl_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  return {jsonl_dataset(o.dataset_path, file_options(o, w, count)), {}, {}, {}};
}

size_t session_count(const ClientOptions& o, size_t count) {
  return o.sessions.num_sessions > 0 ? static_cast<size_t>(o.sessions.num_sessions) : count;
}

// The warm-up request of a session workload: words no session sends, so it
// warms the server without caching any session's prefix.
Prompt session_warmup(int64_t words, int64_t output_len) {
  std::string text;
  for (int64_t i = 0; i < words; ++i) text += i ? " warm" : "warm";
  return session_turn_prompt({{"user", text}}, output_len);
}

Workload synthetic_sessions_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  SyntheticSessionOptions s;
  s.num_sessions = session_count(o, count);
  s.turns = o.sessions.turns > 0 ? o.sessions.turns : 4;
  s.new_tokens = w.input_len;
  s.output_len = w.output_len;
  s.range_ratio = w.range_ratio;
  s.system_prompt_len = o.sessions.system_prompt_len;
  s.think_time = parse_think_time(o.sessions.think_time, "--think-time");
  s.seed = o.seed;
  Workload out;
  out.sessions = synthetic_sessions(s);
  out.prompts.push_back(session_warmup(w.input_len, w.output_len));
  return out;
}

Workload sharegpt_sessions_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  ShareGptSessionOptions s;
  s.num_sessions = session_count(o, count);
  s.max_turns = o.sessions.turns;
  if (w.output_len_given) s.output_len = w.output_len;
  s.think_time = parse_think_time(o.sessions.think_time, "--think-time");
  s.seed = o.seed;
  auto read = sharegpt_sessions(o.dataset_path, s);
  Workload out;
  out.sessions = std::move(read.sessions);
  if (read.skipped_without_user_turn > 0)
    out.notes.push_back(fmt::format("dataset {}: {} conversation(s) without a user turn were skipped",
                                    o.dataset_path, read.skipped_without_user_turn));
  out.prompts.push_back(session_warmup(16, w.output_len_given ? w.output_len : 16));
  return out;
}

Workload agentic_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  AgenticSessionOptions s;
  s.num_sessions = session_count(o, count);
  if (o.sessions.turns > 0) s.turns = o.sessions.turns;
  if (o.sessions.system_prompt_len > 0) s.system_prompt_len = o.sessions.system_prompt_len;
  const auto& a = o.agent;
  s.context_len = a.context_len;
  s.tool_result_len = a.tool_result_len;
  s.tool_call_len = a.tool_call_len;
  // A given OSL (--output-len) is every turn's max_tokens, as for the other session workloads.
  if (w.output_len_given) s.output_len = w.output_len;
  s.subagents = a.subagents;
  s.subagent_turns = a.subagent_turns;
  s.spawn_after_turn = a.spawn_after_turn;
  s.range_ratio = a.range_ratio;
  s.think_time = parse_think_time(o.sessions.think_time, "--think-time");
  s.seed = o.seed;
  Workload out;
  out.sessions = agentic_sessions(s);
  out.prompts.push_back(session_warmup(16, s.output_len.value_or(s.tool_call_len)));
  return out;
}

Workload mooncake_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  TraceReplayOptions t;
  t.token_id_min = o.token_id_min;
  t.token_id_max = o.token_id_max;
  t.seed = o.seed;
  t.speedup = o.trace_speedup;
  if (w.output_len_given) t.output_len = w.output_len;
  // The whole trace unless NUM_PROMPTS (--num-prompts) asks for its first N requests.
  t.max_requests = w.num_prompts_given ? count : 0;
  auto replay = mooncake_replay(read_mooncake_trace(o.dataset_path), t);
  Workload out;
  out.prompts = std::move(replay.prompts);
  out.schedule_s = std::move(replay.offsets_s);
  return out;
}

// Recorded traffic in the JSONL dataset's format: every line also has its
// "timestamp" (ms), and is sent at (timestamp - first) / speed-up.
Workload timed_jsonl_workload(const ClientOptions& o, const WorkloadCase& w, size_t count) {
  auto records = read_jsonl_records(o.dataset_path);
  for (const auto& r : records)
    if (!r.timestamp_ms)
      throw Error(ErrorKind::kBadFormat, "a timed JSONL line needs \"timestamp\" (milliseconds)",
                  fmt::format("{}:{}", o.dataset_path, r.line), std::nullopt,
                  "give every line a timestamp, or use --dataset jsonl to send them without a schedule");
  std::stable_sort(records.begin(), records.end(),
                   [](const JsonlRecord& a, const JsonlRecord& b) { return *a.timestamp_ms < *b.timestamp_ms; });
  if (w.num_prompts_given && records.size() > count) records.resize(count);
  Workload out;
  const double t0 = *records.front().timestamp_ms;
  for (auto& r : records) {
    if (w.output_len_given) r.prompt.output_len = w.output_len;
    out.schedule_s.push_back((*r.timestamp_ms - t0) / 1000.0 / o.trace_speedup);
    out.prompts.push_back(std::move(r.prompt));
  }
  return out;
}

}  // namespace

size_t Workload::planned_requests() const {
  if (sessions.empty()) return schedule_s.empty() ? prompts.size() : schedule_s.size();
  size_t n = 0;
  for (const auto& s : sessions) n += s.turns.size();
  return n;
}

const std::vector<WorkloadKind>& workload_kinds() {
  static const std::vector<WorkloadKind> kinds = [] {
    std::vector<WorkloadKind> k;
    k.push_back({"random", "random token ids, ISL/OSL ± RANDOM_RANGE_RATIO, --prefix-len shared", false, true,
                 false, false, true, true, random_workload});
    k.push_back({"sharegpt", "the first human turn of each ShareGPT conversation", true, false, false, false,
                 false, false, sharegpt_workload});
    k.push_back({"jsonl", "one prompt (text or token ids) a line", true, false, false, false, false, false,
                 jsonl_workload});
    k.push_back({"synthetic_sessions", "multi-turn sessions of ISL new words a turn, OSL output tokens", false,
                 false, true, false, true, false, synthetic_sessions_workload});
    k.push_back({"sharegpt_sessions", "every human turn of each ShareGPT conversation, as sessions", true,
                 false, true, false, false, false, sharegpt_sessions_workload});
    k.push_back({"agentic_coding",
                 "coding-agent sessions: long growing contexts, tool-call-sized outputs, sub-agents on the "
                 "parent's prefix (client.agent)",
                 false, false, true, false, false, false, agentic_workload});
    k.push_back({"mooncake", "recorded traffic: Mooncake JSONL replayed on its timestamps", true, true, false,
                 true, false, false, mooncake_workload});
    k.push_back({"timed_jsonl", "recorded traffic: JSONL prompts each with a \"timestamp\" (ms), replayed on it",
                 true, false, false, true, false, false, timed_jsonl_workload});
    return k;
  }();
  return kinds;
}

const WorkloadKind& workload_kind(const std::string& name) {
  std::string names;
  for (const auto& k : workload_kinds()) {
    if (k.name == name) return k;
    names += names.empty() ? k.name : std::string(", ") + k.name;
  }
  throw Error(ErrorKind::kUsage, fmt::format("dataset '{}': use one of {}", name, names));
}

Workload make_workload(const ClientOptions& client, const WorkloadCase& w, size_t count) {
  return workload_kind(client.dataset).make(client, w, count);
}

std::vector<std::string> check_workload_knobs(const ClientOptions& o, const std::vector<WorkloadCase>& cases) {
  const auto& k = workload_kind(o.dataset);
  auto refuse = [&](const std::string& what, const std::string& fix) {
    throw Error(ErrorKind::kUsage, fmt::format("{} does not apply to dataset {}", what, k.name), "",
                std::nullopt, fix);
  };
  if (k.needs_path && o.dataset_path.empty())
    throw Error(ErrorKind::kUsage, fmt::format("dataset {} needs --dataset-path", k.name));
  if (o.prefix_len > 0 && !k.uses_prefix_len)
    refuse("--prefix-len (client.prefix_len)",
           "drop it; for sessions, --system-prompt-len gives every session one shared prefix");
  if (o.prefix_pool > 0 && !k.uses_prefix_len)
    refuse("--prefix-pool (client.prefix_pool)", "use --dataset random");
  if (o.prefix_pool > 0 && o.prefix_len < 1)
    throw Error(ErrorKind::kUsage, "--prefix-pool (client.prefix_pool) needs --prefix-len, each prefix's length in tokens",
                "", std::nullopt, "add --prefix-len 256 (a multiple of the server's cache block)");
  if (o.prefix_reuse_given && o.prefix_pool < 1)
    throw Error(ErrorKind::kUsage, "--prefix-reuse (client.prefix_reuse) needs --prefix-pool", "", std::nullopt,
                "add --prefix-pool N: the reuse is the fraction of requests that start with one of N prefixes");
  if (o.token_id_max_given && !k.token_ids)
    refuse("--token-id-max (client.token_id_max)", "drop it: this dataset sends text");
  if (o.agent.given && std::string(k.name) != "agentic_coding")
    refuse("client.agent", "use dataset agentic_coding, or drop the agent: section");
  const auto& se = o.sessions;
  if (!k.sessions) {
    const char* given = se.turns ? "--turns (client.turns)"
                        : se.system_prompt_len ? "--system-prompt-len (client.system_prompt_len)"
                        : se.think_time != "0" ? "--think-time (client.think_time)"
                        : !se.header.empty()   ? "--session-header (client.session_header)"
                        : se.concurrency       ? "--session-concurrency (client.session_concurrency)"
                        : se.num_sessions      ? "--num-sessions (client.num_sessions)"
                                               : nullptr;
    if (given) refuse(given, "use --dataset synthetic_sessions or sharegpt_sessions");
  } else {
    if (o.duration_s > 0)
      refuse("--duration (client.duration_s)", "a session workload runs a number of sessions: use --num-sessions");
    if (se.system_prompt_len && k.needs_path)
      refuse("--system-prompt-len (client.system_prompt_len)",
             "ShareGPT sessions take their system prompt from a \"from\": \"system\" entry");
  }
  if (o.trace_speedup != 1.0 && !k.fixed_schedule)
    refuse("--trace-speedup (client.trace_speedup)", "it scales recorded timestamps: use --dataset mooncake");
  if (k.fixed_schedule) {
    if (o.request_rates.size() != 1 || !std::isinf(o.request_rates.front()))
      refuse("--request-rate (client.request_rate)",
             "recorded traffic is sent at its timestamps: --trace-speedup 2 replays it twice as fast");
    if (o.duration_s > 0) refuse("--duration (client.duration_s)", "the trace's own length bounds the run");
  }
  std::vector<std::string> warnings;
  if (!k.uses_lengths) {
    bool isl = false, ratio = false;
    for (const auto& w : cases) isl |= w.input_len_given, ratio |= w.range_ratio_given;
    if (isl || ratio)
      warnings.push_back(fmt::format(
          "{} is not applied: dataset {} sends each record's own prompt; OSL (--output-len) is every "
          "request's max_tokens",
          isl && ratio ? "ISL (--input-len) and RANDOM_RANGE_RATIO (--range-ratio)"
          : isl        ? "ISL (--input-len)"
                       : "RANDOM_RANGE_RATIO (--range-ratio)",
          k.name));
  }
  return warnings;
}

}  // namespace magpie::serve
