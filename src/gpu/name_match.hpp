#pragma once
// Matching a GPU's name, as a driver, a trace or a user spells it, against a
// table of entries (the datasheet, or the roofline's user-extended copy).
// One matcher for both, so a name resolves the same way everywhere.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::gpu {

struct NameCandidate {
  std::string_view name;                    // "H100 PCIe"
  const std::vector<std::string>* aliases;  // may be nullptr
  double memory_gb = 0;                     // 0 = unknown
};

struct NameMatch {
  std::optional<size_t> index;  // into the candidates; nullopt: unknown or ambiguous
  std::string reason;
};

// "H200 SXM" and "h200-sxm" compare equal: lowercase, letters and digits only.
std::string normalise_name(std::string_view s);

// Whole-word, case-insensitive: "H200" is in "NVIDIA H200" but not in "GH200".
bool contains_word(std::string_view hay, std::string_view needle);

// A driver/trace name. Every name or alias is a set of words; an entry matches
// when all words of one of its patterns are words of the device name, scored
// by how many words matched ("A100 PCIe 40GB" beats "A100"). Ties go to the
// entry whose memory is nearest `memory_bytes`. The pick is refused when the
// name names a board (PCIe, NVL) the entry does not, or when memory is more
// than 15% off the entry's. `what` names the table in messages ("the datasheet").
NameMatch match_device_name(std::string_view device_name, int64_t memory_bytes,
                            const std::vector<NameCandidate>& candidates, std::string_view hint);

// A name a user typed: normalised equality with a name or alias, then with a
// vendor prefix ("NVIDIA", "AMD Instinct") dropped, then match_device_name's
// word match. Returns all hits (empty or >1 = unknown or ambiguous).
std::vector<size_t> match_user_name(std::string_view name,
                                    const std::vector<NameCandidate>& candidates);

// GiB in a byte count.
double gib(int64_t bytes);

}  // namespace magpie::gpu
