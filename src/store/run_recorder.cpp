#include "store/run_recorder.hpp"

#include <cstdlib>
#include <exception>

namespace magpie::store {

RunRecorder::RunRecorder(const RunStart& start, Warn warn, std::filesystem::path db)
    : warn_(std::move(warn)), uncaught_(std::uncaught_exceptions()) {
  try {
    store_.emplace(ResultsStore::open(db.empty() ? ResultsStore::default_path() : db));
    id_ = store_->begin(start);
    if (const char* host_class = std::getenv("MAGPIE_HOST_CLASS"); host_class && *host_class)
      store_->set_metadata(*id_, {{"host_class", host_class}});
  } catch (const std::exception& e) {
    warn_once(e.what());
    store_.reset();
  }
}

RunRecorder::~RunRecorder() {
  if (finished_ || !store_ || !id_) return;
  bool unwinding = std::uncaught_exceptions() > uncaught_;
  try {
    store_->finish(*id_, RunStatus::kFailed, {},
                   unwinding ? "the run ended with an error before recording a result"
                             : "the run ended without recording a result");
  } catch (...) {
    // Never throw from a destructor; the next open() cannot help either (the pid is alive until
    // exit).
  }
}

void RunRecorder::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  if (warn_) warn_("results store: " + what + " (the run goes on unrecorded)");
}

void RunRecorder::set_workspace(const std::filesystem::path& workspace, const std::string& gpu) {
  if (!store_ || !id_) return;
  try {
    store_->update_workspace(*id_, workspace, gpu);
  } catch (const std::exception& e) {
    warn_once(e.what());
  }
}

void RunRecorder::set_metadata(const std::map<std::string, std::string>& metadata) {
  if (!store_ || !id_ || metadata.empty()) return;
  try {
    store_->set_metadata(*id_, metadata);
  } catch (const std::exception& e) {
    warn_once(e.what());
  }
}

void RunRecorder::finish(RunStatus status, const std::map<std::string, double>& metrics,
                         const std::string& error) {
  if (finished_) return;
  finished_ = true;
  if (!store_ || !id_) return;
  try {
    store_->finish(*id_, status, metrics, error);
  } catch (const std::exception& e) {
    warn_once(e.what());
  }
}

}  // namespace magpie::store
