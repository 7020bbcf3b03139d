#include "serve/docker_cli.hpp"

#include <fmt/format.h>

#include <sstream>
#include <thread>

#include "core/child_process.hpp"
#include "serve/docker_command.hpp"

namespace magpie::serve {

namespace {

ProcessResult docker(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                     const std::filesystem::path& log = {}) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = timeout;
  spec.capture_output = true;
  spec.log_path = log;
  return run_process(spec);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::string docker_unreachable_reason() {
  if (find_on_path("docker").empty())
    return "the docker CLI is not on PATH (Debian: apt-get install docker.io)";
  auto r = docker(docker_version_argv(), std::chrono::seconds(30));
  if (r.ok()) return {};
  return fmt::format("`docker version` could not reach a daemon ({}): {}", r.describe(),
                     trimmed(r.output));
}

std::string image_digest(const std::string& image, std::string* why) {
  auto r = docker({"docker", "image", "inspect", "--format", "{{.Id}} {{range .RepoDigests}}{{.}},{{end}}", image},
                  std::chrono::seconds(30));
  if (!r.ok()) {
    if (why) *why = fmt::format("`docker image inspect {}` failed ({}): {}", image, r.describe(), trimmed(r.output));
    return {};
  }
  std::string out = trimmed(r.output);
  auto space = out.find(' ');
  if (space == std::string::npos) return out;
  std::string id = out.substr(0, space), repo = trimmed(out.substr(space + 1));
  if (!repo.empty() && repo.back() == ',') repo.pop_back();
  return repo.empty() ? id : id + " (" + repo + ")";
}

std::vector<RunningContainer> parse_running_containers(const std::string& out) {
  std::vector<RunningContainer> found;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    line = trimmed(line);
    if (line.empty()) continue;
    RunningContainer c;
    auto t1 = line.find('\t');
    c.name = line.substr(0, t1);
    if (t1 != std::string::npos) {
      auto t2 = line.find('\t', t1 + 1);
      c.image = line.substr(t1 + 1, t2 == std::string::npos ? std::string::npos : t2 - t1 - 1);
      if (t2 != std::string::npos) {
        try {
          c.port = std::stoi(line.substr(t2 + 1));
        } catch (const std::exception&) {
          c.port = 0;
        }
      }
    }
    found.push_back(std::move(c));
  }
  return found;
}

std::vector<RunningContainer> find_engine_containers(const std::string& framework,
                                                     const std::string& model, int port,
                                                     std::string* why) {
  std::map<std::string, std::string> labels{{kLabelEngine, framework}};
  if (!model.empty()) labels[kLabelModel] = model;
  if (port > 0) labels[kLabelPort] = std::to_string(port);
  auto r = docker(docker_ps_argv(labels), std::chrono::seconds(30));
  if (!r.ok()) {
    if (why) *why = fmt::format("`docker ps` failed ({}): {}", r.describe(), trimmed(r.output));
    return {};
  }
  return parse_running_containers(r.output);
}

std::string remove_container(const std::string& name, const std::filesystem::path& log,
                             std::chrono::seconds wait) {
  // 1 while the daemon lists it, 0 once it does not, -1 when the daemon cannot be asked.
  std::string problem;
  auto known = [&] {
    auto r = docker(docker_inspect_argv(name), std::chrono::seconds(30));
    if (r.ok()) return 1;
    if (r.output.find("No such") != std::string::npos) return 0;
    problem = fmt::format("`docker container inspect {}` failed ({}): {}", name, r.describe(),
                          trimmed(r.output));
    return -1;
  };
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    int state = known();
    if (state == 0) {
      // Gone, unless a create the client started is still finishing: look once more.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      state = known();
      if (state == 0) return {};
    }
    if (state == 1) {
      auto rm = docker(docker_rm_argv(name), std::chrono::seconds(60), log);
      // "removal ... already in progress" (the --rm autoremove) is not a failure: wait for it.
      if (!rm.ok()) problem = trimmed(rm.output);
    }
    if (std::chrono::steady_clock::now() > deadline)
      return fmt::format("container {} may still be there after {} s: {}", name, wait.count(),
                         problem.empty() ? "no answer" : problem);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace magpie::serve
