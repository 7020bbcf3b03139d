#pragma once
// Every key the benchmark YAML accepts (Magpie's, docs/MAGPIE_COMPATIBILITY.md §3,
// plus ours), and what happens to the rest: an
// unknown key is named with the nearest known one; a key of the public Magpie
// tool that has no effect here says "not applicable here: <why>" instead of
// passing silently (docs/BENCHMARK_KEYS.md).
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace magpie::serve {

struct KeyCheck {
  std::vector<std::string> unknown;      // messages; errors under --strict
  std::vector<std::string> not_applied;  // "FILE: KEY: not applicable here: WHY"; always warnings
};

// `root` is the whole document (with or without the `benchmark:` wrapper).
KeyCheck check_benchmark_keys(const YAML::Node& root, const std::string& origin);

}  // namespace magpie::serve
