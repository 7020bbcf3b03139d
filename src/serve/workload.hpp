#pragma once
// Workload generators by name: `--dataset NAME` (client.dataset) picks one
// entry of the registry, which says what the workload is made of (prompts,
// sessions, a fixed schedule) and which knobs shape it, so a knob given to a
// workload it does not shape is refused or warned about, never dropped.
#include <optional>
#include <string>
#include <vector>

#include "serve/benchmark_config.hpp"
#include "serve/dataset.hpp"
#include "serve/sessions.hpp"

namespace magpie::serve {

// A random workload's prefix pool (--prefix-pool): what was asked and what the
// assignment makes of it, reported beside the hit rate the server measured.
struct PrefixPlan {
  int64_t pool = 0, prefix_len = 0;
  double target_reuse = 0;        // the fraction of requests asked to start with a pool prefix
  size_t requests = 0, reusing = 0;  // prompts, and those that start with a pool prefix
  double expected_hit_rate = 0;   // expected_prefix_hit_rate(): prompt tokens a cache can serve
};

struct Workload {
  std::vector<Prompt> prompts;      // single-turn requests (cycled); sessions: the warm-up prompt
  std::vector<Session> sessions;    // non-empty: a session workload
  std::vector<double> schedule_s;   // non-empty: prompts[i] is due at schedule_s[i] (recorded traffic)
  std::vector<std::string> notes;   // for the report's warnings
  std::optional<PrefixPlan> prefix;
  size_t planned_requests() const;  // every turn of every session, or the prompts sent
};

struct WorkloadKind {
  const char* name;
  const char* summary;
  bool needs_path = false;
  bool token_ids = false;       // prompts are token ids: the model's vocabulary bounds them
  bool sessions = false;        // multi-turn: session settings apply
  bool fixed_schedule = false;  // recorded timestamps replace the arrival process
  bool uses_lengths = false;    // ISL and RANDOM_RANGE_RATIO shape its prompts
  bool uses_prefix_len = false;
  // `count`: the case's requests (sessions for a session workload, unless num_sessions is set).
  Workload (*make)(const ClientOptions& client, const WorkloadCase& w, size_t count) = nullptr;
};

const std::vector<WorkloadKind>& workload_kinds();
// Throws Error(kUsage) listing the names when `name` is not one.
const WorkloadKind& workload_kind(const std::string& name);
Workload make_workload(const ClientOptions& client, const WorkloadCase& w, size_t count);

// Usage errors for knobs the chosen workload does not honour; warnings (for
// the report) for Magpie's env-style knobs it ignores (ISL, RANDOM_RANGE_RATIO).
std::vector<std::string> check_workload_knobs(const ClientOptions& client, const std::vector<WorkloadCase>& cases);

}  // namespace magpie::serve
