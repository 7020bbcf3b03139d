#pragma once
// Recording a run from a CLI command or an MCP tool in three lines:
//
//   store::RunRecorder rec({.kind = store::RunKind::kBenchmark, .command_line = cmd, .working_dir =
//   cwd}); auto outcome = serve::run_benchmark(...); rec.finish(outcome.success ? kSucceeded :
//   kFailed, metrics_from_report(kBenchmark, outcome.report));
//
// Recording never fails the run it records: a store that cannot be opened or
// written is reported once through `warn` and the recorder goes quiet. A
// recorder destroyed without finish() marks its run kFailed (kCancelled while
// an exception unwinds is not knowable here, so the error says what happened).
// $MAGPIE_HOST_CLASS, when set, is recorded as metadata host_class: runs on
// machines of one class (a CI runner pool) then share a series (store/series.hpp).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "store/results_store.hpp"

namespace magpie::store {

class RunRecorder {
 public:
  using Warn = std::function<void(const std::string&)>;
  // `db` empty: ResultsStore::default_path().
  explicit RunRecorder(const RunStart& start, Warn warn = {}, std::filesystem::path db = {});
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  void set_workspace(const std::filesystem::path& workspace, const std::string& gpu = "");
  // Adds facts about the run (engine, model, workload: what its series key reads).
  void set_metadata(const std::map<std::string, std::string>& metadata);
  void finish(RunStatus status, const std::map<std::string, double>& metrics = {},
              const std::string& error = "");
  std::optional<int64_t> id() const { return id_; }

 private:
  void warn_once(const std::string& what);
  std::optional<ResultsStore> store_;
  std::optional<int64_t> id_;
  Warn warn_;
  bool finished_ = false;
  bool warned_ = false;
  int uncaught_ = 0;
};

}  // namespace magpie::store
