#include "sources/detail/repo_files.hpp"

#include <array>
#include <string_view>
#include <system_error>

#include "core/error.hpp"

namespace magpie::sources::detail {
namespace fs = std::filesystem;
namespace {

bool skip_directory(const std::string& name) {
  return name.starts_with('.') || name.starts_with("build") || name == "node_modules" ||
         name == "__pycache__";
}

bool language_of(const fs::path& path, SourceLanguage& language) {
  static constexpr std::array<std::string_view, 10> kCpp = {".cu",  ".cuh", ".hip", ".cpp", ".cc",
                                                            ".cxx", ".h",   ".hpp", ".hxx", ".inl"};
  const std::string ext = path.extension().string();
  if (ext == ".py") {
    language = SourceLanguage::kPython;
    return true;
  }
  for (auto e : kCpp) {
    if (ext == e) {
      language = SourceLanguage::kCpp;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string normalize_repo_root(const fs::path& root) {
  std::error_code ec;
  fs::path abs = fs::absolute(root, ec);
  if (ec) abs = root;
  std::string s = abs.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::vector<SourceFile> list_source_files(const std::vector<std::string>& roots) {
  std::vector<SourceFile> files;
  for (uint32_t r = 0; r < roots.size(); ++r) {
    const fs::path root(roots[r]);
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      throw Error(ErrorKind::kNotFound, "source repository is not a directory", roots[r],
                  std::nullopt, "pass the root of a checked-out repository");
    }
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      throw Error(ErrorKind::kUnreadable, "cannot list source repository: " + ec.message(),
                  roots[r]);
    }
    for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
      if (ec) break;  // an entry vanished or became unreadable mid-walk: keep what we have
      const fs::directory_entry& entry = *it;
      if (entry.is_directory(ec)) {
        if (skip_directory(entry.path().filename().string())) it.disable_recursion_pending();
        continue;
      }
      SourceLanguage language;
      if (!language_of(entry.path(), language) || !entry.is_regular_file(ec)) continue;
      files.push_back(
          {r, entry.path().lexically_relative(root).generic_string(), entry.path(), language});
    }
  }
  return files;
}

}  // namespace magpie::sources::detail
