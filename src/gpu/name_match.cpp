#include "gpu/name_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace magpie::gpu {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// "NVIDIA A100-SXM4-40GB" → {nvidia, a100, sxm4, 40gb}.
std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (is_alnum(c)) {
      cur.push_back(lower(c));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool has_word(const std::vector<std::string>& words, std::string_view w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

// Words of the longest pattern of `c` whose words all appear in `device`; 0 = no match.
size_t match_score(const std::vector<std::string>& device, const NameCandidate& c) {
  size_t best = 0;
  auto consider = [&](std::string_view pattern) {
    const auto words = words_of(pattern);
    if (words.empty() || words.size() <= best) return;
    for (const auto& w : words) {
      if (!has_word(device, w)) return;
    }
    best = words.size();
  };
  consider(c.name);
  if (c.aliases != nullptr) {
    for (const auto& a : *c.aliases) consider(a);
  }
  return best;
}

std::string names_of(const std::vector<size_t>& idx, const std::vector<NameCandidate>& cands) {
  std::string out;
  for (size_t i : idx) {
    if (!out.empty()) out += ", ";
    out += cands[i].name;
  }
  return out;
}

// Among candidates, the one whose stated memory is nearest the device's;
// nullopt when memory is unknown or two candidates tie.
std::optional<size_t> nearest_by_memory(const std::vector<size_t>& idx,
                                        const std::vector<NameCandidate>& cands,
                                        int64_t mem_bytes) {
  if (mem_bytes <= 0) return std::nullopt;
  const double have = gib(mem_bytes);
  std::optional<size_t> best;
  double best_gap = 0;
  bool tie = false;
  for (size_t i : idx) {
    const double gap = std::fabs(cands[i].memory_gb - have);
    if (!best || gap < best_gap - 1e-9) {
      best = i;
      best_gap = gap;
      tie = false;
    } else if (std::fabs(gap - best_gap) <= 1e-9) {
      tie = true;
    }
  }
  if (tie) return std::nullopt;
  return best;
}

// PCIe and NVL boards share the die but not clocks, power or memory: the
// board `device` names when the picked entry does not describe it.
std::optional<std::string_view> unlisted_board(const std::vector<std::string>& device,
                                               const NameCandidate& c) {
  for (std::string_view board : {"pcie", "nvl"}) {
    if (!has_word(device, board)) continue;
    bool listed = has_word(words_of(c.name), board);
    if (c.aliases != nullptr) {
      for (const auto& a : *c.aliases) listed = listed || has_word(words_of(a), board);
    }
    if (!listed) return board;
  }
  return std::nullopt;
}

constexpr double kMemoryTolerance = 0.15;  // 80 GB parts report ~79 GiB; 40 GB ones are far off

}  // namespace

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

std::string normalise_name(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (is_alnum(c)) out.push_back(lower(c));
  }
  return out;
}

bool contains_word(std::string_view hay, std::string_view needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  for (size_t pos = 0; pos + needle.size() <= hay.size(); ++pos) {
    bool equal = true;
    for (size_t i = 0; i < needle.size() && equal; ++i)
      equal = lower(hay[pos + i]) == lower(needle[i]);
    if (!equal) continue;
    const size_t end = pos + needle.size();
    const bool left_ok = pos == 0 || !is_alnum(hay[pos - 1]);
    const bool right_ok = end == hay.size() || !is_alnum(hay[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

NameMatch match_device_name(std::string_view device_name, int64_t memory_bytes,
                            const std::vector<NameCandidate>& candidates, std::string_view hint) {
  const auto device = words_of(device_name);
  std::vector<size_t> hits;
  size_t best = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const size_t score = match_score(device, candidates[i]);
    if (score == 0 || score < best) continue;
    if (score > best) hits.clear();
    best = score;
    hits.push_back(i);
  }
  if (hits.empty()) {
    return {std::nullopt, fmt::format("unknown GPU '{}': not in the table; {}", device_name, hint)};
  }
  size_t pick = hits.front();
  if (hits.size() > 1) {
    auto by_mem = nearest_by_memory(hits, candidates, memory_bytes);
    if (!by_mem) {
      return {std::nullopt,
              fmt::format("GPU '{}' matches several entries ({}) and memory does not tell them "
                          "apart; {}",
                          device_name, names_of(hits, candidates), hint)};
    }
    pick = *by_mem;
  }
  const NameCandidate& c = candidates[pick];
  if (auto board = unlisted_board(device, c)) {
    return {std::nullopt,
            fmt::format("GPU '{}' is a {} board; the {} entry describes another board "
                        "(different clocks, power, memory); {}",
                        device_name, *board == "pcie" ? "PCIe" : "NVL", c.name, hint)};
  }
  if (memory_bytes > 0 && c.memory_gb > 0 &&
      std::fabs(gib(memory_bytes) - c.memory_gb) > kMemoryTolerance * c.memory_gb) {
    return {std::nullopt,
            fmt::format("GPU '{}' has {:.1f} GiB but the {} entry describes a {:g} GB board "
                        "(a different variant); {}",
                        device_name, gib(memory_bytes), c.name, c.memory_gb, hint)};
  }
  std::string why = fmt::format("device name '{}' matched {}", device_name, c.name);
  if (hits.size() > 1) {
    why += fmt::format(" (of {}, by memory: {:.1f} GiB)", names_of(hits, candidates),
                       gib(memory_bytes));
  }
  return {pick, why};
}

std::vector<size_t> match_user_name(std::string_view name,
                                    const std::vector<NameCandidate>& candidates) {
  auto exact = [&](const std::string& q) {
    std::vector<size_t> hits;
    if (q.empty()) return hits;
    // Names first: "A100" is an entry's name and a sibling board's alias.
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (normalise_name(candidates[i].name) == q) hits.push_back(i);
    }
    if (!hits.empty()) return hits;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].aliases == nullptr) continue;
      for (const auto& a : *candidates[i].aliases) {
        if (normalise_name(a) == q) {
          hits.push_back(i);
          break;
        }
      }
    }
    return hits;
  };
  std::string q = normalise_name(name);
  auto hits = exact(q);
  if (hits.empty()) {
    // Vendor prefixes users copy from nvidia-smi / amd-smi.
    for (std::string_view prefix : {"nvidia", "amdinstinct", "amd", "instinct", "tesla"}) {
      if (q.rfind(prefix, 0) == 0) {
        hits = exact(q.substr(prefix.size()));
        break;
      }
    }
  }
  if (hits.empty()) {
    auto m = match_device_name(name, 0, candidates, "");
    if (m.index) hits.push_back(*m.index);
  }
  return hits;
}

}  // namespace magpie::gpu
