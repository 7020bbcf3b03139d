#pragma once
// Talks to the docker daemon for docker mode, through the docker CLI (so
// DOCKER_HOST and contexts apply): is a daemon there, which of magpie's engine
// containers run (force_reuse), and removing a container for sure.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace magpie::serve {

// "" when `docker version` reaches a daemon, else why not (with docker's words).
std::string docker_unreachable_reason();

// The image's content id and, when it came from a registry, its repo digests
// ("sha256:… (repo@sha256:…)"); "" when docker cannot say (`why` says so).
std::string image_digest(const std::string& image, std::string* why = nullptr);

struct RunningContainer {
  std::string name;
  std::string image;
  int port = 0;  // its magpie.port label; 0 when absent
};

// Parses docker_ps_argv()'s output (name, image, port per line).
std::vector<RunningContainer> parse_running_containers(const std::string& ps_output);

// Magpie's running engine containers for this framework and model (and port,
// when > 0). Empty when none, or when docker cannot be asked (`why` says so).
std::vector<RunningContainer> find_engine_containers(const std::string& framework,
                                                     const std::string& model, int port,
                                                     std::string* why = nullptr);

// Removes a container whatever its state, then waits until the daemon no
// longer knows it (an autoremove may still be under way) or `wait` passes.
// Commands and their output are appended to `log`. Returns "" or what went wrong.
std::string remove_container(const std::string& name, const std::filesystem::path& log,
                             std::chrono::seconds wait);

}  // namespace magpie::serve
