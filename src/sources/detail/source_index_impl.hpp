#pragma once
// The data behind SourceIndex, shared by building (source_index.cpp) and
// lookup (source_match.cpp).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sources/detail/source_patterns.hpp"
#include "sources/source_index.hpp"

namespace magpie::sources {

struct SourceIndex::Impl {
  struct Site {
    uint32_t file = 0;  // index into files
    uint32_t line = 0;
    detail::SiteKind kind = detail::SiteKind::kGlobal;
  };
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<std::string> repos;                       // normalised roots
  std::vector<std::pair<uint32_t, std::string>> files;  // (repo, relative path)
  std::vector<uint64_t> file_hash;  // of each file's bytes: identical copies count once
  std::unordered_map<std::string, std::vector<Site>, NameHash, std::equal_to<>> by_name;
  // Every identifier with a definition, sorted, each followed by '\n': one
  // memmem per lookup finds the names that contain a symbol.
  std::string definition_names;
  std::vector<uint32_t> name_starts;  // offset of each name in definition_names

  size_t files_scanned = 0;
  size_t bytes_scanned = 0;
  size_t definitions = 0;
  size_t files_skipped = 0;
};

}  // namespace magpie::sources
