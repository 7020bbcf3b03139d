#pragma once
// `ray_config:` of the benchmark and kernel YAML (and the ray_* MCP
// arguments), typed once. Where the Ray cluster is, what a job may ask of it,
// and where results travel (shared storage both sides can read).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace magpie::ray {

struct RayConfig {
  // auto | http(s)://host:port | ray://host:10001 | host:port. auto resolves as
  // Ray does: RAY_ADDRESS, then the local dashboard (127.0.0.1:8265).
  std::string cluster_address = "auto";
  std::string shared_storage_path;  // a folder every node and this machine see at the same path
  std::optional<double> entrypoint_num_gpus, entrypoint_num_cpus, entrypoint_memory_bytes;
  std::map<std::string, double> entrypoint_resources;  // custom resources, e.g. {"H200": 1}
  std::optional<int64_t> num_nodes, gpus_per_node;     // recorded; one job runs on one node
  std::map<std::string, std::string> env_vars;         // runtime_env env_vars
  std::string working_dir;  // runtime_env working_dir: a URI the cluster can fetch (s3://, gcs://,
                            // https://…zip)
  std::map<std::string, std::string> headers;  // extra HTTP headers (authenticated dashboards)
  std::string magpie_command;  // how nodes run magpie; "" = this binary on a loopback cluster, else
                               // `magpie`
  std::string run_mode =
      "local";  // how a serving benchmark runs its engine on the node (local|docker)
  double pending_timeout_s = 600;  // a job PENDING longer than this is stopped (no resources)
  double job_timeout_s = 0;        // 0 = no limit beyond the job's own
  double connect_timeout_s = 5;    // an unreachable dashboard fails within this
};

// Reads a `ray_config:` mapping; unknown keys go to `warnings` with the
// nearest known key; wrong types throw Error(kUsage) naming origin and key.
RayConfig parse_ray_config(const YAML::Node& node, const std::string& origin,
                           std::vector<std::string>& warnings);

// The dashboard the Jobs API lives on.
struct ClusterAddress {
  std::string scheme = "http";  // http | https
  std::string host = "127.0.0.1";
  uint16_t port = 8265;
  std::string base_path;    // a prefix before /api (dashboards behind a proxy)
  std::string given;        // what the user wrote (or RAY_ADDRESS), for messages
  std::string url() const;  // "http://127.0.0.1:8265"
  bool loopback() const;
};

// Resolves `auto` through RAY_ADDRESS; ray://host:10001 (the Ray Client port)
// maps to the dashboard on host:8265. Throws Error(kUsage) on a malformed address.
ClusterAddress resolve_cluster_address(const std::string& configured);

}  // namespace magpie::ray
