#pragma once
// Brings up the server a benchmark talks to: a local child process, a docker
// container (through the docker CLI), or nothing (--endpoint). Readiness is
// /health answering 200 and then /v1/models listing a model; a server that
// exits or misses the deadline fails with the tail of its log.
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/benchmark_config.hpp"
#include "serve/endpoint.hpp"
#include "serve/server_process.hpp"

namespace magpie::serve {

struct LaunchPlan {
  std::string mode;  // local | docker | endpoint
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // set for the server
  std::string image;
  std::string container_name;  // docker: magpie-<framework>-<port>
  // docker: false leaves a running container running (server_lifecycle.cleanup)
  bool cleanup = true;
  Endpoint endpoint;
  std::filesystem::path log_path;
  std::filesystem::path profiler_dir;  // empty = not profiling
};

// Pure: what would be run for this config (unit-tested; no side effects but
// choosing a free port when PORT is unset).
LaunchPlan plan_launch(const BenchmarkConfig& config, const std::filesystem::path& workspace);

class EngineServer {
 public:
  explicit EngineServer(LaunchPlan plan) : plan_(std::move(plan)) {}
  ~EngineServer();
  EngineServer(const EngineServer&) = delete;
  EngineServer& operator=(const EngineServer&) = delete;

  // Starts (unless endpoint mode) and waits until ready; returns the served model id.
  // Throws Error(kInternal) with the log tail on exit/timeout, or when `stop` is set.
  // `on_attempt` hears each failed readiness probe's outcome ("Connection refused",
  // "/health answered 503"), so a progress line can say what the wait is on.
  std::string start(double ready_timeout_s, const std::atomic<bool>* stop,
                    const std::function<void(const std::string& last)>& on_attempt = {});
  bool alive();  // endpoint mode: always true
  std::string exit_status() const { return process_.exit_status(); }
  // Stops the server. Docker mode: `docker stop`, then the container is removed
  // and shutdown returns once the daemon no longer lists it; with cleanup false
  // a running container is left running (only the CLI client is ended).
  void shutdown();
  // Docker, cleanup false: the container that was left running ("" otherwise).
  const std::string& left_running() const { return left_running_; }
  // Docker: what went wrong removing the container ("" when it is gone).
  const std::string& cleanup_problem() const { return cleanup_problem_; }
  const LaunchPlan& plan() const { return plan_; }
  // The served model's /v1/models entry once ready (vLLM: id, root, max_model_len).
  const nlohmann::json& model_card() const { return model_card_; }
  nlohmann::json describe() const;  // command, image, env, mode, log

 private:
  void docker_stop_and_end_client();

  LaunchPlan plan_;
  ServerProcess process_;
  bool started_ = false;
  std::string left_running_, cleanup_problem_;
  nlohmann::json model_card_;
};

// The model revision when it can be known without the network: a local
// directory's path, or the commit in the Hugging Face cache's refs/main.
std::string model_revision(const std::string& model, const std::string& hf_cache_path);

}  // namespace magpie::serve
