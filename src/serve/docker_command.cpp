#include "serve/docker_command.hpp"

#include "core/error.hpp"

namespace magpie::serve {

GpuVendor vendor_for_arch(const std::string& arch) {
  if (arch.starts_with("gfx")) return GpuVendor::kAmd;
  if (arch.starts_with("sm_") || arch.empty()) return GpuVendor::kNvidia;
  throw Error(ErrorKind::kUsage, "unknown gpu_arch '" + arch + "': use sm_90, gfx942, ...");
}

std::string default_image(Framework f, const std::string& arch) {
  bool amd = vendor_for_arch(arch) == GpuVendor::kAmd;
  switch (f) {
    case Framework::kVllm:
      return amd ? "vllm/vllm-openai-rocm:latest" : "vllm/vllm-openai:latest";
    case Framework::kSglang:
      return amd ? "lmsysorg/sglang:latest-rocm" : "lmsysorg/sglang:latest-cu130-amd64-runtime";
    case Framework::kAtom:
      if (!amd)
        throw Error(ErrorKind::kUsage,
                    "ATOM images exist for AMD GPUs only; set gpu_arch: gfx942 or docker_image");
      return "rocm/atom:latest";
  }
  return {};
}

std::vector<std::string> docker_run_argv(const DockerSpec& s) {
  if (s.image.empty()) throw Error(ErrorKind::kUsage, "docker mode needs an image");
  // --rm: the daemon removes the container when it stops, even with no client
  // left. --init: the engine is not PID 1, so `docker stop`'s SIGTERM reaches it
  // (PID 1 ignores signals it has no handler for) and its children are reaped.
  std::vector<std::string> a = {"docker", "run", "--rm", "--init", "--name", s.container_name};
  for (const auto& [k, v] : s.labels) a.insert(a.end(), {"--label", k + "=" + v});
  a.insert(a.end(), {"--network", "host", "--ipc", "host", "--shm-size", s.shm_size});
  switch (s.vendor) {
    case GpuVendor::kNvidia:
      if (auto it = s.env.find("CUDA_VISIBLE_DEVICES"); it != s.env.end() && !it->second.empty()) {
        // Give the container only these GPUs (host NVML indices, as gpu_selection
        // picks them); inside they are renumbered from 0, so the variable stays out.
        // The inner quotes keep docker's CSV parser from splitting "device=1,2".
        a.insert(a.end(), {"--gpus", "\"device=" + it->second + "\""});
      } else {
        a.insert(a.end(), {"--gpus", "all"});
      }
      break;
    case GpuVendor::kAmd:
      a.insert(a.end(), {"--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
                         "--security-opt", "seccomp=unconfined"});
      break;
    case GpuVendor::kNone:
      break;
  }
  for (const auto& [host, container] : s.volumes) a.insert(a.end(), {"-v", host + ":" + container});
  const bool devices_given = s.vendor == GpuVendor::kNvidia &&
                             s.env.count("CUDA_VISIBLE_DEVICES") &&
                             !s.env.at("CUDA_VISIBLE_DEVICES").empty();
  for (const auto& [k, v] : s.env) {
    if (devices_given && (k == "CUDA_VISIBLE_DEVICES" || k == "CUDA_DEVICE_ORDER")) continue;
    a.insert(a.end(), {"-e", k + "=" + v});
  }
  // vLLM's images have `vllm serve` as their entrypoint; override it so the
  // same argv works for every image.
  if (s.engine_argv.empty()) throw Error(ErrorKind::kInternal, "docker run without a command");
  a.insert(a.end(), {"--entrypoint", s.engine_argv.front(), s.image});
  a.insert(a.end(), s.engine_argv.begin() + 1, s.engine_argv.end());
  return a;
}

std::vector<std::string> docker_stop_argv(const std::string& name) {
  return {"docker", "stop", "--time", "10", name};
}

std::vector<std::string> docker_rm_argv(const std::string& name) {
  return {"docker", "rm", "--force", name};
}

std::vector<std::string> docker_ps_argv(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> a = {"docker", "ps", "--filter", "status=running"};
  for (const auto& [k, v] : labels) a.insert(a.end(), {"--filter", "label=" + k + "=" + v});
  a.insert(a.end(),
           {"--format", std::string("{{.Names}}\t{{.Image}}\t{{.Label \"") + kLabelPort + "\"}}"});
  return a;
}

std::vector<std::string> docker_version_argv() {
  return {"docker", "version", "--format", "{{.Server.Version}}"};
}

std::vector<std::string> docker_inspect_argv(const std::string& name) {
  return {"docker", "container", "inspect", "--format", "{{.State.Status}}", name};
}

}  // namespace magpie::serve
