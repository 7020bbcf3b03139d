#pragma once
// `docker run` lines for engines in containers (through the docker CLI, so
// the user's docker config and contexts apply). Pure: builds argv only.
#include <map>
#include <string>
#include <vector>

#include "serve/engine_command.hpp"

namespace magpie::serve {

enum class GpuVendor { kNvidia, kAmd, kNone };
GpuVendor vendor_for_arch(const std::string& gpu_arch);  // sm_* → NVIDIA, gfx* → AMD

// Magpie's image choice by framework and GPU arch (docs/MAGPIE_COMPATIBILITY.md §3).
std::string default_image(Framework f, const std::string& gpu_arch);

struct DockerSpec {
  std::string image;
  std::string container_name;
  GpuVendor vendor = GpuVendor::kNvidia;
  std::string shm_size = "32g";
  std::vector<std::pair<std::string, std::string>> volumes;  // host → container
  std::map<std::string, std::string> env;
  std::vector<std::string> engine_argv;  // the command inside the container
};

// Host networking: the engine's --port is the port on the host.
std::vector<std::string> docker_run_argv(const DockerSpec& spec);
std::vector<std::string> docker_stop_argv(const std::string& container_name);

}  // namespace magpie::serve
