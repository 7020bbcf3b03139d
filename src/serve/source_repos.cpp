#include "serve/source_repos.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "core/child_process.hpp"
#include "core/error.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

namespace {

// "https://host/org/aiter.git/" → "aiter"
std::string checkout_name(std::string entry) {
  while (!entry.empty() && entry.back() == '/') entry.pop_back();
  auto cut = entry.find_last_of("/:");
  std::string name = cut == std::string::npos ? entry : entry.substr(cut + 1);
  if (name.ends_with(".git")) name.resize(name.size() - 4);
  return name.empty() ? "repo" : name;
}

// git's message, on one line and short enough for an error.
std::string git_message(const std::string& output) {
  std::string out;
  for (char ch : output) out += ch == '\n' || ch == '\r' ? ' ' : ch;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  if (out.size() > 400) out = out.substr(0, 397) + "...";
  return out.empty() ? "(git printed nothing)" : out;
}

}  // namespace

bool is_git_remote(const std::string& entry) {
  if (entry.find("://") != std::string::npos) return true;
  const auto at = entry.find('@'), colon = entry.find(':');
  if (at != std::string::npos && colon != std::string::npos && at < colon && entry.find('/') > colon) return true;
  std::string e = entry;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e.ends_with(".git");
}

fs::path repos_base_dir(const GapSettings& gap) {
  if (!gap.repos_base_dir.empty()) return gap.repos_base_dir;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".cache" / "magpie" / "repos";
}

SourceRepos prepare_source_repos(const GapSettings& gap, const std::atomic<bool>* cancel) {
  SourceRepos out;
  for (const auto& entry : gap.kernel_source_repos) {
    if (!is_git_remote(entry)) {
      out.paths.push_back(entry);
      continue;
    }
    if (!gap.auto_clone_repos) {
      out.notes.push_back(fmt::format(
          "gap_analysis.kernel_source_repos: {} is a git remote and auto_clone_repos is false; not searched", entry));
      continue;
    }
    const fs::path base = repos_base_dir(gap);
    const fs::path dest = base / checkout_name(entry);
    std::error_code ec;
    if (fs::is_directory(dest, ec) && !fs::is_empty(dest, ec)) {
      out.notes.push_back(fmt::format("gap_analysis.auto_clone_repos: {} reused (already at {})", entry, dest.string()));
      out.paths.push_back(dest.string());
      continue;
    }
    fs::create_directories(base, ec);
    if (ec)
      throw Error(ErrorKind::kUnreadable,
                  fmt::format("gap_analysis.repos_base_dir: cannot create {}: {}", base.string(), ec.message()));
    // Cloned beside its place and renamed: a failed clone leaves no half checkout.
    const fs::path partial = base / fmt::format(".{}.partial-{}", dest.filename().string(), ::getpid());
    fs::remove_all(partial, ec);
    ProcessSpec spec;
    spec.argv = {"git", "clone", "--depth", "1", "--quiet", "--", entry, partial.string()};
    spec.env = {{"GIT_TERMINAL_PROMPT", "0"}};  // a private repository fails instead of waiting for a password
    spec.timeout = std::chrono::minutes(10);
    spec.capture_output = true;
    spec.cancel = cancel;
    ProcessResult r = run_process(spec);
    if (r.spawn_failed)
      throw Error(ErrorKind::kNotFound, "gap_analysis.auto_clone_repos: git is not installed", "", std::nullopt,
                  "install git, or clone the repositories yourself and list their folders in kernel_source_repos");
    if (!r.ok()) {
      fs::remove_all(partial, ec);
      if (r.cancelled) throw Error(ErrorKind::kCancelled, fmt::format("cloning {} was cancelled", entry));
      throw Error(ErrorKind::kUnreachable,
                  fmt::format("gap_analysis.auto_clone_repos: could not clone {} into {} (git {}): {}", entry,
                              dest.string(), r.describe(), git_message(r.output)),
                  "", std::nullopt,
                  "check the URL and your access to it, or clone it yourself and list the folder in "
                  "kernel_source_repos (or set auto_clone_repos: false)");
    }
    fs::remove_all(dest, ec);  // an empty folder in the way
    fs::rename(partial, dest, ec);
    if (ec)
      throw Error(ErrorKind::kUnreadable, fmt::format("gap_analysis.auto_clone_repos: cannot move the clone of {} to {}: {}",
                                                      entry, dest.string(), ec.message()));
    out.notes.push_back(fmt::format("gap_analysis.auto_clone_repos: cloned {} into {}", entry, dest.string()));
    out.paths.push_back(dest.string());
  }
  return out;
}

}  // namespace magpie::serve
