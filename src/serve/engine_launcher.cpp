#include "serve/engine_launcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "serve/docker_cli.hpp"
#include "serve/docker_command.hpp"
#include "serve/engine_command.hpp"
#include "serve/http_client.hpp"
#include "serve/model_files.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

namespace {

std::string home_path(const std::string& p) {
  if (p.starts_with("~/")) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + p.substr(1);
  }
  return p;
}

}  // namespace

LaunchPlan plan_launch(const BenchmarkConfig& c, const fs::path& workspace) {
  LaunchPlan plan;
  plan.log_path = workspace / "server.log";
  if (!c.endpoint.empty()) {
    plan.mode = "endpoint";
    plan.endpoint = Endpoint::parse(c.endpoint);
    return plan;
  }
  plan.mode = c.run_mode;
  auto fw = parse_framework(c.framework);
  EngineSpec spec;
  spec.framework = fw;
  spec.model = c.model;
  spec.host = c.run_mode == "docker" ? "0.0.0.0" : "127.0.0.1";
  spec.port = c.port() ? *c.port() : free_port();
  spec.tp = static_cast<int>(c.tensor_parallel());
  spec.max_model_len = c.env("MAX_MODEL_LEN");
  spec.revision = c.env("MODEL_REVISION");
  spec.gpu_memory_utilization = c.env("GPU_MEMORY_UTILIZATION", c.env("GPU_MEM_UTIL"));
  spec.gpu = c.engine_gpu;
  const char* extra_key = fw == Framework::kVllm     ? "EXTRA_VLLM_ARGS"
                          : fw == Framework::kSglang ? "EXTRA_SGLANG_ARGS"
                                                     : "EXTRA_ATOM_ARGS";
  spec.extra_args = split_args(c.env(extra_key));
  spec.extra_args.insert(spec.extra_args.end(), c.engine_extra_args.begin(),
                         c.engine_extra_args.end());
  if (!c.engine_executable.empty()) {
    if (fw == Framework::kVllm)
      spec.vllm_executable = c.engine_executable;
    else
      spec.python = c.engine_executable;
  }
  plan.endpoint.host = "127.0.0.1";
  plan.endpoint.port = static_cast<uint16_t>(spec.port);
  // Every env key that is not one of Magpie's workload knobs goes to the server.
  static const std::vector<std::string> kWorkloadKeys = {"TP",
                                                         "CONC",
                                                         "ISL",
                                                         "OSL",
                                                         "RANDOM_RANGE_RATIO",
                                                         "NUM_PROMPTS",
                                                         "MAX_MODEL_LEN",
                                                         "PORT",
                                                         "MODEL_REVISION",
                                                         "EXTRA_VLLM_ARGS",
                                                         "EXTRA_SGLANG_ARGS",
                                                         "EXTRA_ATOM_ARGS"};
  for (const auto& [k, v] : c.envs)
    if (std::find(kWorkloadKeys.begin(), kWorkloadKeys.end(), k) == kWorkloadKeys.end())
      plan.env[k] = v;
  if (c.torch_profiler) {
    plan.profiler_dir = fs::absolute(workspace / "torch_trace");
    plan.env[profiler_dir_env(fw)] = plan.profiler_dir.string();
  }
  if (c.torch_profiler && fw == Framework::kVllm && c.env("VLLM_PROFILER_STYLE") != "env") {
    // vLLM ≥ 0.11 reads the profiler from --profiler-config (the env var is
    // gone by 0.32); VLLM_PROFILER_STYLE=env keeps old images on the env var alone.
    nlohmann::json pc{{"profiler", "torch"},
                      {"torch_profiler_dir", plan.profiler_dir.string()},
                      {"torch_profiler_record_shapes", true},
                      {"torch_profiler_with_stack", false}};
    spec.extra_args.insert(spec.extra_args.begin(), {"--profiler-config", pc.dump()});
  }
  plan.env.erase("VLLM_PROFILER_STYLE");
  auto argv = engine_argv(spec);
  if (c.run_mode == "docker") {
    DockerSpec d;
    d.image = c.docker_image.empty() ? default_image(fw, c.gpu_arch) : c.docker_image;
    // A CPU engine (--cpu-engine) gets no GPU flags: `--gpus` fails on a host
    // without the NVIDIA container toolkit.
    d.vendor = c.engine_gpu ? vendor_for_arch(c.gpu_arch) : GpuVendor::kNone;
    // One engine per host port, so the port names the container.
    d.container_name = fmt::format("magpie-{}-{}", c.framework, spec.port);
    d.labels = {{kLabelEngine, c.framework},
                {kLabelModel, c.model},
                {kLabelPort, std::to_string(spec.port)},
                {kLabelWorkspace, fs::absolute(workspace).string()}};
    d.env = plan.env;
    d.env["HF_HOME"] = "/root/.cache/huggingface";
    auto hf = home_path(c.hf_cache_path.empty() ? "~/.cache/huggingface" : c.hf_cache_path);
    d.volumes.emplace_back(hf, "/root/.cache/huggingface");
    // The workspace at the same path inside, so profiler traces land in it.
    auto ws = fs::absolute(workspace).string();
    d.volumes.emplace_back(ws, ws);
    if (fs::exists(c.model)) {
      auto m = fs::absolute(c.model).string();
      d.volumes.emplace_back(m, m);
    }
    d.engine_argv = argv;
    plan.image = d.image;
    plan.container_name = d.container_name;
    plan.cleanup = c.lifecycle.cleanup;
    plan.argv = docker_run_argv(d);
  } else {
    plan.argv = std::move(argv);
  }
  return plan;
}

EngineServer::~EngineServer() { shutdown(); }

std::string EngineServer::start(double ready_timeout_s, const std::atomic<bool>* stop,
                                const std::function<void(const std::string& last)>& on_attempt) {
  if (plan_.mode == "docker") {
    // Said before anything starts, instead of a `docker run` failure in server.log.
    if (auto why = docker_unreachable_reason(); !why.empty())
      throw Error(ErrorKind::kUnreachable, "docker mode: " + why, "", std::nullopt,
                  "start the docker daemon (or set DOCKER_HOST), or pass --run-mode local");
  }
  if (plan_.mode != "endpoint") {
    process_.start(plan_.argv, plan_.env, plan_.log_path);
    started_ = true;
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(ready_timeout_s * 1000));
  bool healthy = false;
  std::string last;
  auto fail = [&](const std::string& why) {
    std::string tail = plan_.mode == "endpoint" ? "" : log_tail_lines(plan_.log_path, 25);
    return Error(
        ErrorKind::kInternal,
        fmt::format(
            "server at {} {}{}", plan_.endpoint.url(), why,
            tail.empty() ? "" : "; last lines of " + plan_.log_path.string() + ":\n" + tail));
  };
  while (true) {
    if (stop && stop->load()) throw fail("was not ready when interrupted");
    if (plan_.mode != "endpoint" && !process_.running())
      throw fail(fmt::format("exited before it was ready ({})", process_.exit_status()));
    if (!healthy) {
      auto r = http_request(plan_.endpoint, "GET", plan_.endpoint.target("/health"), "",
                            std::chrono::seconds(5));
      healthy = r.ok && r.status == 200;
      last = r.ok ? fmt::format("/health answered {}", r.status) : r.error;
    }
    if (healthy) {
      auto r = http_request(plan_.endpoint, "GET", plan_.endpoint.target("/v1/models"), "",
                            std::chrono::seconds(10));
      if (r.ok && r.status == 200) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (!j.is_discarded() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
            j["data"][0].contains("id")) {
          model_card_ = j["data"][0];
          return j["data"][0]["id"].get<std::string>();
        }
        last = "/v1/models listed no model";
      } else {
        last = r.ok ? fmt::format("/v1/models answered {}", r.status) : r.error;
      }
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw fail(fmt::format("was not ready within {:.0f} s (last: {})", ready_timeout_s, last));
    if (on_attempt) on_attempt(last);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void EngineServer::docker_stop_and_end_client() {
  try {
    ProcessSpec stop;
    stop.argv = docker_stop_argv(plan_.container_name);
    stop.timeout = std::chrono::seconds(60);
    stop.log_path = plan_.log_path;
    run_process(stop);  // "No such container" (it already exited) is fine
  } catch (const std::exception&) {
  }
  process_.shutdown();
  cleanup_problem_ =
      remove_container(plan_.container_name, plan_.log_path, std::chrono::seconds(30));
}

bool EngineServer::alive() { return plan_.mode == "endpoint" || process_.running(); }

void EngineServer::shutdown() {
  if (!started_) return;
  started_ = false;
  if (plan_.mode == "docker" && !plan_.container_name.empty()) {
    if (!plan_.cleanup && process_.running()) {
      // SIGKILL the CLI client: a SIGTERM would be forwarded into the container
      // (docker run's --sig-proxy) and stop the engine we were asked to keep.
      process_.kill();
      left_running_ = plan_.container_name;
      return;
    }
    // Stopping the CLI client does not stop the container; ask docker. Then the
    // container is removed for sure: the client may have been ended while the
    // daemon was still creating it (never started, so --rm does not apply).
    docker_stop_and_end_client();
    return;
  }
  process_.shutdown();
}

nlohmann::json EngineServer::describe() const {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : plan_.env) env[k] = v;
  nlohmann::json j{{"mode", plan_.mode}, {"url", plan_.endpoint.url()}, {"env", env}};
  if (!plan_.argv.empty()) j["command"] = shell_join(plan_.argv);
  if (!plan_.image.empty()) j["image"] = plan_.image;
  if (plan_.mode != "endpoint") j["log"] = plan_.log_path.string();
  return j;
}

std::string model_revision(const std::string& model, const std::string& hf_cache_path) {
  if (model.empty()) return {};
  if (fs::exists(model)) return "local:" + fs::absolute(model).string();
  std::ifstream ref(hf_repo_dir(model, hf_cache_path) / "refs" / "main");
  std::string rev;
  if (ref && std::getline(ref, rev)) return rev;
  return "unknown";
}

}  // namespace magpie::serve
