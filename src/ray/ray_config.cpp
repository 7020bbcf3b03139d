#include "ray/ray_config.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "core/config_keys.hpp"
#include "core/error.hpp"

namespace magpie::ray {

namespace {

const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> keys = {"cluster_address",     "shared_storage_path",
                                                "entrypoint_num_gpus", "entrypoint_num_cpus",
                                                "entrypoint_memory",   "entrypoint_resources",
                                                "resources",           "num_nodes",
                                                "gpus_per_node",       "env_vars",
                                                "working_dir",         "headers",
                                                "magpie_command",      "run_mode",
                                                "pending_timeout_s",   "job_timeout_s",
                                                "connect_timeout_s"};
  return keys;
}

template <typename T>
T scalar(const YAML::Node& n, const std::string& origin, const std::string& key) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(ErrorKind::kUsage,
                fmt::format("ray_config.{}: '{}' is not a valid value", key, n.Scalar()), origin,
                std::nullopt, "see docs/RAY.md for the keys and their types");
  }
}

template <typename T>
std::map<std::string, T> mapping(const YAML::Node& n, const std::string& origin,
                                 const std::string& key) {
  if (!n.IsMap())
    throw Error(ErrorKind::kUsage, fmt::format("ray_config.{} must be a mapping", key), origin,
                std::nullopt, fmt::format("write {}: {{NAME: value}}", key));
  std::map<std::string, T> out;
  for (const auto& kv : n)
    out[kv.first.Scalar()] = scalar<T>(kv.second, origin, key + "." + kv.first.Scalar());
  return out;
}

}  // namespace

RayConfig parse_ray_config(const YAML::Node& node, const std::string& origin,
                           std::vector<std::string>& warnings) {
  RayConfig c;
  if (!node || node.IsNull()) return c;
  if (!node.IsMap())
    throw Error(ErrorKind::kUsage, "ray_config must be a mapping", origin, std::nullopt,
                "write ray_config: {cluster_address: auto, shared_storage_path: /mnt/shared}");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "cluster_address")
      c.cluster_address = scalar<std::string>(v, origin, key);
    else if (key == "shared_storage_path")
      c.shared_storage_path = scalar<std::string>(v, origin, key);
    else if (key == "entrypoint_num_gpus")
      c.entrypoint_num_gpus = scalar<double>(v, origin, key);
    else if (key == "entrypoint_num_cpus")
      c.entrypoint_num_cpus = scalar<double>(v, origin, key);
    else if (key == "entrypoint_memory")
      c.entrypoint_memory_bytes = scalar<double>(v, origin, key);
    else if (key == "entrypoint_resources" || key == "resources")
      c.entrypoint_resources = mapping<double>(v, origin, key);
    else if (key == "num_nodes")
      c.num_nodes = scalar<int64_t>(v, origin, key);
    else if (key == "gpus_per_node")
      c.gpus_per_node = scalar<int64_t>(v, origin, key);
    else if (key == "env_vars")
      c.env_vars = mapping<std::string>(v, origin, key);
    else if (key == "working_dir")
      c.working_dir = scalar<std::string>(v, origin, key);
    else if (key == "headers")
      c.headers = mapping<std::string>(v, origin, key);
    else if (key == "magpie_command")
      c.magpie_command = scalar<std::string>(v, origin, key);
    else if (key == "run_mode")
      c.run_mode = scalar<std::string>(v, origin, key);
    else if (key == "pending_timeout_s")
      c.pending_timeout_s = scalar<double>(v, origin, key);
    else if (key == "job_timeout_s")
      c.job_timeout_s = scalar<double>(v, origin, key);
    else if (key == "connect_timeout_s")
      c.connect_timeout_s = scalar<double>(v, origin, key);
    else
      warnings.push_back(unknown_key_message(origin, "ray_config.", key, known_keys()));
  }
  if (c.run_mode != "local" && c.run_mode != "docker")
    throw Error(ErrorKind::kUsage,
                fmt::format("ray_config.run_mode '{}': use local or docker", c.run_mode), origin,
                std::nullopt, "it says how the job runs the engine on the node it lands on");
  return c;
}

std::string ClusterAddress::url() const {
  return fmt::format("{}://{}:{}{}", scheme, host, port, base_path);
}

bool ClusterAddress::loopback() const {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

ClusterAddress resolve_cluster_address(const std::string& configured) {
  std::string text = configured;
  std::string given = configured;
  if (text.empty() || text == "auto") {
    const char* env = std::getenv("RAY_ADDRESS");
    if (env && *env && std::string(env) != "auto") {
      text = env;
      given = fmt::format("RAY_ADDRESS={}", env);
    } else {
      ClusterAddress local;
      local.given = "auto (no RAY_ADDRESS: the local dashboard)";
      return local;
    }
  }
  ClusterAddress a;
  a.given = given;
  std::string rest = text;
  bool ray_client = false;
  if (auto p = rest.find("://"); p != std::string::npos) {
    std::string scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
    if (scheme == "ray")
      ray_client = true;
    else if (scheme == "http" || scheme == "https")
      a.scheme = scheme;
    else
      throw Error(ErrorKind::kUsage,
                  fmt::format("cluster address '{}': unknown scheme '{}'", given, scheme), "",
                  std::nullopt,
                  "use auto, http://HOST:8265, https://HOST[:PORT] or ray://HOST:10001");
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    a.base_path = rest.substr(slash);
    while (!a.base_path.empty() && a.base_path.back() == '/') a.base_path.pop_back();
    rest = rest.substr(0, slash);
  }
  a.port = a.scheme == "https" ? 443 : 8265;
  if (auto colon = rest.rfind(':');
      colon != std::string::npos && rest.find(']') == std::string::npos) {
    std::string port = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    char* end = nullptr;
    long v = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end || v <= 0 || v > 65535)
      throw Error(ErrorKind::kUsage,
                  fmt::format("cluster address '{}': bad port '{}'", given, port), "", std::nullopt,
                  "write HOST:PORT, e.g. http://127.0.0.1:8265");
    a.port = static_cast<uint16_t>(v);
  }
  if (rest.empty())
    throw Error(ErrorKind::kUsage, fmt::format("cluster address '{}' has no host", given), "",
                std::nullopt, "write e.g. http://head-node:8265");
  a.host = rest;
  // The Ray Client port (10001) speaks gRPC; the Jobs API is on the dashboard.
  if (ray_client) a.port = 8265;
  return a;
}

}  // namespace magpie::ray
