#pragma once
// The accuracy gate (envs.RUN_EVAL, `quality:`): after the timed cases, lm-eval
// scores the served model through its OpenAI-compatible endpoint
// (local-completions or local-chat-completions), writing its results and
// per-item samples under <workspace>/lm_eval/. The report's `quality_gate`
// block has the public tool's field names (docs/MAGPIE_COMPATIBILITY.md §4):
// status, per-task primary metrics, and receipts (path, size, sha256) of every
// result and sample file, so a later `results diff` can pair two runs' items
// (store/quality_samples.hpp) and trust they are the files this run wrote.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace magpie::serve {

struct QualitySettings {
  bool requested = false;                    // envs.RUN_EVAL or quality.enabled
  std::vector<std::string> tasks{"gsm8k"};   // quality.tasks / envs.MAGPIE_EVAL_TASKS
  std::optional<int64_t> limit;              // quality.limit / envs.MAGPIE_EVAL_LIMIT
  std::optional<int64_t> num_fewshot;        // quality.num_fewshot
  std::string task_dir;                      // quality.task_dir / envs.EVAL_TASKS_DIR (--include_path)
  std::string model_type = "local-completions";  // or local-chat-completions
  std::string lm_eval;                       // quality.lm_eval: the executable; "" = lm_eval on PATH
  int64_t num_concurrent = 1;
  double timeout_s = 3600;
};

// The lm_eval executable the run will use; Error(kNotFound) naming the fix
// when there is none, so the run stops before anything is timed.
std::string resolve_lm_eval(const QualitySettings& settings);

// lm_eval's command line against `base_url` (http://host:port) for the served `model`.
std::vector<std::string> lm_eval_argv(const QualitySettings& settings, const std::string& executable,
                                      const std::string& base_url, const std::string& model,
                                      const std::filesystem::path& output_dir);

// Runs lm-eval (log: <workspace>/lm_eval/lm_eval.log) and returns the
// quality_gate block; a failed run is status "invalid" with the error.
nlohmann::json run_quality_gate(const QualitySettings& settings, const std::string& executable,
                                const std::string& base_url, const std::string& model,
                                const std::filesystem::path& workspace, const std::atomic<bool>* stop);

// The quality_gate block from what <workspace>/lm_eval holds (results*.json,
// samples*.jsonl); `errors` are added to its own.
nlohmann::json quality_gate_json(const std::filesystem::path& workspace, bool requested,
                                 std::vector<std::string> errors = {});

}  // namespace magpie::serve
