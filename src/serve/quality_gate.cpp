#include "serve/quality_gate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>

#include "core/child_process.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The public tool's order of preference for a task's headline metric.
constexpr std::array kPrimaryMetrics = {"exact_match,strict-match", "exact_match,flexible-extract",
                                        "exact_match,none",         "exact_match",
                                        "acc_norm,none",            "acc,none",
                                        "acc_norm",                 "acc",
                                        "pass@1,none",              "pass@1"};

json receipt(const fs::path& file, const fs::path& workspace) {
  return {{"path", fs::relative(file, workspace).generic_string()},
          {"size_bytes", fs::file_size(file)},
          {"sha256", file_sha256(file)}};
}

json numeric_metrics(const json& task_result) {
  json out = json::object();
  for (const auto& [name, value] : task_result.items()) {
    if (name.find("stderr") != std::string::npos || value.is_boolean() || !value.is_number()) continue;
    double v = value.get<double>();
    if (std::isfinite(v)) out[name] = v;
  }
  return out;
}

}  // namespace

std::string resolve_lm_eval(const QualitySettings& s) {
  if (!s.lm_eval.empty()) {
    std::error_code ec;
    if (fs::is_regular_file(s.lm_eval, ec)) return fs::absolute(s.lm_eval).string();
    if (auto p = find_on_path(s.lm_eval); !p.empty()) return p;
    throw Error(ErrorKind::kNotFound, fmt::format("quality.lm_eval: {} does not exist", s.lm_eval), {},
                std::nullopt,
                "point quality.lm_eval at the lm_eval executable of a venv with `pip install 'lm-eval[api]'`");
  }
  if (auto p = find_on_path("lm_eval"); !p.empty()) return p;
  throw Error(ErrorKind::kNotFound,
              "the accuracy gate is on (envs.RUN_EVAL / quality.enabled) but lm-eval is not installed: no "
              "lm_eval on PATH; nothing was started",
              {}, std::nullopt,
              "pip install 'lm-eval[api]' (or set quality.lm_eval to its lm_eval executable), or turn RUN_EVAL off");
}

std::vector<std::string> lm_eval_argv(const QualitySettings& s, const std::string& executable,
                                      const std::string& base_url, const std::string& model,
                                      const fs::path& output_dir) {
  const bool chat = s.model_type == "local-chat-completions";
  std::string tasks;
  for (const auto& t : s.tasks) tasks += (tasks.empty() ? "" : ",") + t;
  // Text prompts, no client-side tokenizer: the served model is the only model.
  std::vector<std::string> argv{
      executable, "--model", s.model_type, "--model_args",
      fmt::format("model={},base_url={}/v1/{},num_concurrent={},max_retries=3,tokenized_requests=False,"
                  "tokenizer_backend=None",
                  model, base_url, chat ? "chat/completions" : "completions", s.num_concurrent),
      "--tasks", tasks, "--batch_size", "1", "--output_path", output_dir.string(), "--log_samples"};
  if (chat) argv.emplace_back("--apply_chat_template");
  if (s.limit) argv.insert(argv.end(), {"--limit", std::to_string(*s.limit)});
  if (s.num_fewshot) argv.insert(argv.end(), {"--num_fewshot", std::to_string(*s.num_fewshot)});
  if (!s.task_dir.empty()) argv.insert(argv.end(), {"--include_path", fs::absolute(s.task_dir).string()});
  return argv;
}

json run_quality_gate(const QualitySettings& s, const std::string& executable, const std::string& base_url,
                      const std::string& model, const fs::path& workspace, const std::atomic<bool>* stop) {
  const fs::path dir = workspace / "lm_eval";
  fs::create_directories(dir);
  ProcessSpec spec;
  spec.argv = lm_eval_argv(s, executable, base_url, model, fs::absolute(dir));
  spec.log_path = dir / "lm_eval.log";
  // A task YAML names its data files relative to its folder.
  if (!s.task_dir.empty()) spec.cwd = fs::absolute(s.task_dir);
  spec.timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000));
  spec.cancel = stop;
  // The endpoint needs no key, but the OpenAI client code insists on one.
  spec.env["OPENAI_API_KEY"] = "EMPTY";
  spec.env["HF_DATASETS_OFFLINE"] = "1";
  ProcessResult r = run_process(spec);
  std::vector<std::string> errors;
  if (!r.ok())
    errors.push_back(fmt::format("lm_eval {}; see {}: {}", r.describe(), spec.log_path.string(),
                                 log_tail(spec.log_path, 600)));
  json gate = quality_gate_json(workspace, true, std::move(errors));
  gate["command"] = shell_join(spec.argv);
  return gate;
}

json quality_gate_json(const fs::path& workspace, bool requested, std::vector<std::string> errors) {
  const fs::path dir = workspace / "lm_eval";
  std::vector<fs::path> files, results;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  json artifacts = json::array(), receipts = json::array(), sample_receipts = json::array(),
       result_receipts = json::array();
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    json r = receipt(f, workspace);
    artifacts.push_back(r["path"]);
    receipts.push_back(r);
    if (name.starts_with("samples") && f.extension() == ".jsonl") sample_receipts.push_back(r);
    if (name.starts_with("results") && f.extension() == ".json") {
      results.push_back(f);
      result_receipts.push_back(r);
    }
  }
  json sample_set_digest = nullptr;
  if (!sample_receipts.empty())
    sample_set_digest =
        sha256_hex(json{{"schema", "magpie.lm-eval-sample-set/v1"}, {"artifacts", sample_receipts}}.dump());
  json tasks = json::object();
  for (const auto& f : results) {
    std::ifstream in(f);
    json data = json::parse(in, nullptr, false);
    const std::string rel = fs::relative(f, workspace).generic_string();
    if (data.is_discarded() || !data.is_object() || !data.contains("results") || !data["results"].is_object()) {
      errors.push_back(rel + ": missing results object");
      continue;
    }
    for (const auto& [task, result] : data["results"].items()) {
      json metrics = numeric_metrics(result);
      std::string primary;
      for (const char* m : kPrimaryMetrics)
        if (metrics.contains(m)) {
          primary = m;
          break;
        }
      if (primary.empty() && !metrics.empty()) primary = metrics.begin().key();
      if (primary.empty()) {
        errors.push_back(fmt::format("{}:{}: no numeric quality metric", rel, task));
        continue;
      }
      tasks[task] = {{"primary_metric", primary}, {"value", metrics[primary]}, {"metrics", metrics},
                     {"metric_count", metrics.size()},  {"metrics_truncated", false},  {"source", rel}};
    }
  }
  json gate{{"kind", "lm_eval"},
            {"requested", requested},
            {"artifacts", artifacts},
            {"artifact_count", files.size()},
            {"artifacts_truncated", false},
            {"result_artifact_receipts", result_receipts},
            {"artifact_receipts", receipts},
            {"sample_artifact_receipts", sample_receipts},
            {"sample_set_digest", sample_set_digest},
            {"result_artifact_count", results.size()},
            {"result_artifacts_truncated", false},
            {"tasks", tasks}};
  if (results.empty()) {
    if (requested) errors.insert(errors.begin(), "RUN_EVAL was requested but no lm_eval/results*.json artifact exists");
    gate["status"] = requested ? "missing" : "not_requested";
    gate["passed"] = requested ? json(false) : json(nullptr);
    gate["evidence_present"] = false;
    gate["outcome_digest"] = nullptr;
  } else {
    const bool passed = !tasks.empty() && errors.empty();
    json outcomes = json::object();
    for (const auto& [task, t] : tasks.items())
      outcomes[task] = {{"metric", t["primary_metric"]}, {"value", t["value"]}, {"source", t["source"]}};
    json policy = json::array();
    for (const char* m : kPrimaryMetrics) policy.push_back(m);
    gate["status"] = passed ? "passed" : "invalid";
    gate["passed"] = passed;
    gate["evidence_present"] = !tasks.empty();
    gate["primary_metric_policy"] = policy;
    gate["primary_outcomes"] = outcomes;
    gate["outcome_digest"] = sha256_hex(json{{"schema", "magpie.lm-eval-outcomes/v1"},
                                            {"primary_metric_policy", policy},
                                            {"outcomes", outcomes},
                                            {"result_artifacts", result_receipts},
                                            {"sample_set_digest", sample_set_digest}}
                                           .dump());
    gate["task_count"] = tasks.size();
    gate["tasks_truncated"] = false;
  }
  gate["errors"] = errors;
  gate["error_count"] = errors.size();
  gate["errors_truncated"] = false;
  return gate;
}

}  // namespace magpie::serve
