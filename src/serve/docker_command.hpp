#pragma once
// `docker` command lines for engines in containers (through the docker CLI, so
// DOCKER_HOST, contexts and the user's config apply). Pure: builds argv only;
// docker_cli.hpp runs them.
#include <map>
#include <string>
#include <vector>

#include "serve/engine_command.hpp"

namespace magpie::serve {

enum class GpuVendor { kNvidia, kAmd, kNone };
GpuVendor vendor_for_arch(const std::string& gpu_arch);  // sm_* → NVIDIA, gfx* → AMD

// Magpie's image choice by framework and GPU arch (docs/MAGPIE_COMPATIBILITY.md §3).
std::string default_image(Framework f, const std::string& gpu_arch);

// Labels on every engine container magpie starts: `docker ps --filter
// label=magpie.engine` lists them, and force_reuse finds one by them.
inline constexpr const char* kLabelEngine = "magpie.engine";        // vllm | sglang | atom
inline constexpr const char* kLabelModel = "magpie.model";          // the model as given
inline constexpr const char* kLabelPort = "magpie.port";            // the engine's port on the host
inline constexpr const char* kLabelWorkspace = "magpie.workspace";  // the run that started it

struct DockerSpec {
  std::string image;
  std::string container_name;
  std::map<std::string, std::string> labels;
  GpuVendor vendor = GpuVendor::kNvidia;
  std::string shm_size = "32g";
  std::vector<std::pair<std::string, std::string>> volumes;  // host → container
  std::map<std::string, std::string> env;
  std::vector<std::string> engine_argv;  // the command inside the container
};

// Host networking: the engine's --port is the port on the host.
std::vector<std::string> docker_run_argv(const DockerSpec& spec);
std::vector<std::string> docker_stop_argv(const std::string& container_name);
// Removes the container whatever its state (created, running, exited).
std::vector<std::string> docker_rm_argv(const std::string& container_name);
// Running containers whose labels match all of `labels`, one per line:
// name, image and the magpie.port label, tab-separated.
std::vector<std::string> docker_ps_argv(const std::map<std::string, std::string>& labels);
// Prints the daemon's version: fails when no daemon answers.
std::vector<std::string> docker_version_argv();
// Exit 0 while the daemon still knows the container.
std::vector<std::string> docker_inspect_argv(const std::string& container_name);

}  // namespace magpie::serve
