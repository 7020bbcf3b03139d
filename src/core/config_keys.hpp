#pragma once
// Unknown configuration keys: a misspelled `gpu_selecton:` must not pass
// silently. Config readers name the key, the nearest known one, and the file.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace magpie {

// The known key closest to `key` by edit distance (adjacent swaps count as one
// edit), when it is close enough to be a likely typo; case is ignored.
std::optional<std::string> nearest_key(std::string_view key, const std::vector<std::string>& known);

// "FILE: unknown key 'benchmark.gpu_selecton' ignored (did you mean 'gpu_selection'?)"
std::string unknown_key_message(const std::string& origin, const std::string& path, std::string_view key,
                                const std::vector<std::string>& known);

// Under --strict, unknown keys end the command with Error(kUsage) listing
// them all; otherwise they stay warnings and this does nothing.
void reject_unknown_keys(const std::vector<std::string>& unknown, bool strict, const std::string& origin);

// Where a config value sits: the file and, for YAML, its 1-based line and column.
struct ConfigPlace {
  std::string origin;  // the file, or the flag a value came from ("--env")
  int line = 0, column = 0;  // 0: unknown
};

// A value of the wrong type or range, said the same way by every config reader:
// Error(kUsage) "FILE:LINE:COL: gap_analysis.top_k: expected a positive integer, got 'twenty'"
// with `fix` as the hint ("e.g. top_k: 20").
Error config_value_error(const ConfigPlace& place, const std::string& path, const std::string& expected,
                         const std::string& seen, const std::string& fix = {});

}  // namespace magpie
