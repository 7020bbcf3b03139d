#pragma once
// A job's run in the results store (store::RunRecorder underneath): a
// `running` row when it starts (a process killed mid-run leaves a row the
// next open marks incomplete), then its status, metrics and error when it
// ends. A store that cannot be opened costs a warning on stderr, never the job.
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "jobs/job_context.hpp"
#include "store/run_recorder.hpp"

namespace magpie::jobs {

using store::RunKind;

class RunRecorder {
 public:
  RunRecorder(const JobContext& context, RunKind kind, std::filesystem::path workspace,
              std::string config_text = {});
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // Runs `job` between begin and finish: an exception marks the run failed
  // (or cancelled) and propagates.
  template <class Job>
  auto run(Job&& job) -> decltype(job()) {
    begin();
    try {
      auto outcome = job();
      finish();
      return outcome;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) cancel();
      finish_with_error(e.what());
      throw;
    } catch (const std::exception& e) {
      finish_with_error(e.what());
      throw;
    }
  }

  int64_t id() const;
  void metric(const std::string& name, double value) { metrics_[name] = value; }
  // A fact about the run (engine, model, workload); empty values are not recorded.
  void metadata(const std::string& key, const std::string& value) {
    if (!value.empty()) metadata_[key] = value;
  }
  void workspace(const std::filesystem::path& path);
  void gpu(const std::string& name);
  // The outcome stands, but the run did not succeed.
  void fail(const std::string& error) { error_ = error; }
  void cancel() { cancelled_ = true; }

 private:
  void begin();
  void finish();
  void finish_with_error(const std::string& error);

  const JobContext& context_;
  store::RunStart start_;
  std::optional<store::RunRecorder> store_;
  bool cancelled_ = false;
  std::optional<std::string> error_;
  std::map<std::string, double> metrics_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace magpie::jobs
