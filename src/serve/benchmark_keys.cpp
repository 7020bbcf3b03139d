#include "serve/benchmark_keys.hpp"

#include <fmt/format.h>

#include "core/config_keys.hpp"

namespace magpie::serve {

namespace {

// One key of the schema. `any` accepts any children (a map of user names);
// `not_applied` names why a Magpie key has no effect in this version.
struct Key {
  std::string name;
  std::vector<Key> children;
  bool any = false;
  std::string not_applied;
};

Key leaf(std::string name, std::string not_applied = {}) { return {std::move(name), {}, false, std::move(not_applied)}; }
Key any(std::string name, std::string not_applied = {}) { return {std::move(name), {}, true, std::move(not_applied)}; }
Key node(std::string name, std::vector<Key> children, std::string not_applied = {}) {
  return {std::move(name), std::move(children), false, std::move(not_applied)};
}

const Key& schema() {
  static const Key root = node(
      "benchmark",
      {leaf("framework"),
       leaf("model"),
       leaf("precision"),
       leaf("run_mode"),
       leaf("run_kind"),
       any("envs"),
       leaf("docker_image"),
       leaf("gpu_arch"),
       leaf("timeout_seconds"),
       leaf("hf_cache_path"),
       node("gap_analysis",
            {leaf("enabled"), leaf("trace_start_pct"), leaf("trace_end_pct"), leaf("top_k"),
             leaf("min_duration_us"), leaf("categories"), leaf("ignore_categories"),
             leaf("find_kernel_sources"), leaf("kernel_source_repos")}),
       node("gpu_selection",
            {leaf("auto"), leaf("min_free_memory_gb"), leaf("count"), leaf("candidates")}),
       any("ray_config"),  // read by the Ray job layer (ray::parse_ray_config names unknown keys)
       node("server_lifecycle",
            {leaf("enabled"),
             leaf("cleanup"),
             leaf("force_reuse"),
             leaf("server_ready_timeout_s")}),
       node("sweep_matrix",
            {node("cases", {leaf("CONC"), leaf("ISL"), leaf("OSL"), leaf("NUM_PROMPTS"), leaf("RANDOM_RANGE_RATIO")}),
             leaf("on_failure")}),
       node("profiler",
            {node("torch_profiler", {leaf("enabled")}),
             node("system_profiler", {leaf("enabled"), leaf("profile_args")}),
             node("tracelens",
                  {leaf("enabled"), leaf("analysis_mode"), leaf("analysis_stages"), leaf("num_steps"),
                   leaf("export_format"), leaf("gpu_arch_config"), leaf("perf_report_enabled"),
                   leaf("multi_rank_report_enabled")}),
             node("gpu_monitor", {leaf("enabled"), leaf("interval_sec")})}),
       // Ours.
       leaf("endpoint"),
       node("client",
            {leaf("api"), leaf("dataset"), leaf("dataset_path"), leaf("request_rate"), leaf("burstiness"),
             leaf("warmups"), leaf("duration_s"), leaf("seed"), leaf("prefix_len"), leaf("token_id_max"),
             leaf("request_timeout_s"), leaf("served_model_name"), leaf("slo_ttft_ms"), leaf("slo_tpot_ms"),
             leaf("slo_e2el_ms")})});
  return root;
}

std::vector<std::string> names(const std::vector<Key>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(k.name);
  return out;
}

void walk(const YAML::Node& node, const Key& key, const std::string& path, const std::string& origin,
          KeyCheck& out) {
  if (!key.not_applied.empty()) {
    out.not_applied.push_back(fmt::format("{}: {} is accepted but not applied by this version: {}", origin,
                                          path, key.not_applied));
    return;  // its children say nothing more
  }
  if (key.any || key.children.empty()) return;
  if (node.IsSequence()) {  // sweep_matrix.cases: each item is a map of the case keys
    for (size_t i = 0; i < node.size(); ++i)
      walk(node[i], key, fmt::format("{}[{}]", path, i), origin, out);
    return;
  }
  if (!node.IsMap()) return;  // a type error is the reader's to report
  const std::vector<std::string> known = names(key.children);
  for (const auto& kv : node) {
    const std::string k = kv.first.Scalar();
    const Key* child = nullptr;
    for (const auto& c : key.children) {
      // Case keys are upper-cased by the reader.
      bool upper_keys = key.name == "cases";
      std::string cmp = k;
      if (upper_keys)
        for (auto& ch : cmp) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (c.name == cmp) child = &c;
    }
    if (!child) {
      out.unknown.push_back(unknown_key_message(origin, path + ".", k, known));
      continue;
    }
    walk(kv.second, *child, path + "." + k, origin, out);
  }
}

}  // namespace

KeyCheck check_benchmark_keys(const YAML::Node& root, const std::string& origin) {
  KeyCheck out;
  if (!root.IsMap()) return out;
  if (root["benchmark"]) {
    for (const auto& kv : root) {
      const std::string k = kv.first.Scalar();
      if (k != "benchmark") out.unknown.push_back(unknown_key_message(origin, "", k, {"benchmark"}));
    }
    walk(root["benchmark"], schema(), "benchmark", origin, out);
  } else {
    walk(root, schema(), "benchmark", origin, out);
  }
  return out;
}

}  // namespace magpie::serve
