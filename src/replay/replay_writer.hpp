#pragma once
// Writes a replay plan: per selected op a folder with baseline.py (the
// recorded op), candidate.py (a copy to edit; kept when it already exists),
// compare.yaml (the kernel YAML for `magpie compare -k` / `magpie analyze -k`),
// note.md and note.json (what the trace says the op cost); and at the top
// replay.md / replay.json listing every selected op, the skipped ones with why.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "replay/replay.hpp"

namespace magpie::replay {

struct TargetFiles {
  std::string slug;
  std::filesystem::path dir, baseline, candidate, compare_yaml, note_md, note_json;
  bool candidate_kept = false;  // an edited candidate.py was already there
};

struct ReplayFiles {
  std::filesystem::path dir, summary_md, summary_json;
  std::vector<TargetFiles> targets;  // in outcome.targets' order
};

// Throws Error(kUnreadable) when a file cannot be written.
ReplayFiles write_replay(const ReplayOutcome& outcome, const std::filesystem::path& output_dir);

// working_dir: set on both entries when the YAML lives outside the replay folder.
std::string compare_yaml_text(const ReplayTarget& target, std::string_view trace_name,
                              const std::string& working_dir = {});
std::string note_markdown(const ReplayTarget& target, std::string_view trace_name);
nlohmann::json note_json(const ReplayTarget& target);
nlohmann::json skipped_json(const SkippedOp& skipped);
// replay.json: the selection, every target (with its files when given) and every skipped op.
nlohmann::json outcome_json(const ReplayOutcome& outcome, const ReplayFiles* files = nullptr);
std::string summary_markdown(const ReplayOutcome& outcome);

}  // namespace magpie::replay
