#include "core/phase_times.hpp"
#include "jobs/run_recorder.hpp"

#include "store/run_environment.hpp"

#include <fmt/format.h>

#include <iostream>

namespace magpie::jobs {

namespace fs = std::filesystem;

RunRecorder::RunRecorder(const JobContext& context, RunKind kind, fs::path workspace,
                         std::string config_text)
    : context_(context) {
  start_.kind = kind;
  start_.face = context.face;
  start_.command_line = context.command_line;
  start_.workspace = workspace.empty() ? std::string() : store::normalize_workspace(workspace);
  start_.config_hash = store::hash_config(config_text.empty() ? context.command_line : config_text);
  std::error_code ec;
  start_.working_dir = fs::current_path(ec).string();
}

int64_t RunRecorder::id() const { return store_ && store_->id() ? *store_->id() : 0; }

void RunRecorder::begin() {
  if (!context_.record) return;
  store_.emplace(start_, [](const std::string& w) { std::cerr << "warning: " << w << "\n"; },
                 context_.store_path);
  magpie_phase::mark("run recorded as started");
}

void RunRecorder::workspace(const fs::path& path) {
  start_.workspace = store::normalize_workspace(path);
  if (store_) store_->set_workspace(start_.workspace, start_.gpu);
}

void RunRecorder::gpu(const std::string& name) {
  start_.gpu = name;
  // Without a workspace yet, workspace() records both.
  if (store_ && !name.empty() && !start_.workspace.empty()) store_->set_workspace(start_.workspace, name);
}

void RunRecorder::finish() {
  if (store_) store_->set_metadata(metadata_);
  if (error_) {
    finish_with_error(*error_);
  } else if (store_) {
    store_->finish(cancelled_ ? store::RunStatus::kCancelled : store::RunStatus::kSucceeded, metrics_);
    magpie_phase::mark("run recorded as finished");
  }
}

void RunRecorder::finish_with_error(const std::string& error) {
  if (store_) {
    store_->set_metadata(metadata_);
    store_->finish(cancelled_ ? store::RunStatus::kCancelled : store::RunStatus::kFailed, metrics_, error);
  }
}

}  // namespace magpie::jobs
