#include "core/config_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace magpie {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::optional<std::string> nearest_key(std::string_view key, const std::vector<std::string>& known) {
  const std::string k = lower(key);
  std::optional<std::string> best;
  size_t best_d = SIZE_MAX;
  for (const auto& candidate : known) {
    size_t d = edit_distance(k, lower(candidate));
    if (d < best_d) best_d = d, best = candidate;
  }
  // A third of the key's length, at least 1 and at most 3: "gpu_selecton" →
  // "gpu_selection" (1), "torch_profilr" → "torch_profiler" (1); "model" is
  // no typo of "mode" plus unrelated letters.
  const size_t allowed = std::clamp<size_t>(k.size() / 3, 1, 3);
  if (best && best_d <= allowed && best_d > 0) return best;
  if (best && best_d == 0) return best;  // differs only in case
  return std::nullopt;
}

std::string unknown_key_message(const std::string& origin, const std::string& path, std::string_view key,
                                const std::vector<std::string>& known) {
  std::string msg = fmt::format("{}{}unknown key '{}{}' ignored", origin, origin.empty() ? "" : ": ", path, key);
  if (auto near = nearest_key(key, known)) msg += fmt::format(" (did you mean '{}'?)", *near);
  return msg;
}

void reject_unknown_keys(const std::vector<std::string>& unknown, bool strict, const std::string& origin) {
  if (!strict || unknown.empty()) return;
  std::string list;
  for (const auto& u : unknown) list += "\n  " + u;
  throw Error(ErrorKind::kUsage, fmt::format("{} unknown key(s) under --strict:{}", unknown.size(), list), origin,
              std::nullopt, "fix the spelling, or drop --strict to run with them ignored");
}

Error config_value_error(const ConfigPlace& place, const std::string& path, const std::string& expected,
                         const std::string& seen, const std::string& fix) {
  std::string where = place.origin;
  if (place.line > 0) where += fmt::format(":{}:{}", place.line, place.column);
  // One line: a multi-line value is shown up to its first line break.
  std::string shown = seen.substr(0, seen.find('\n'));
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  if (shown.size() < seen.size() && !shown.ends_with("...")) shown += "...";
  return Error(ErrorKind::kUsage, fmt::format("{}: expected {}, got '{}'", path, expected, shown), where,
               std::nullopt, fix);
}

}  // namespace magpie
