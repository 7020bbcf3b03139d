#pragma once
// gap_analysis.auto_clone_repos (the public Magpie tool's key): entries of
// kernel_source_repos that name a git remote are cloned into repos_base_dir
// before the run, so the kernel→source mapping searches a checkout. An
// existing checkout is reused as it is; a clone that fails stops the run
// before anything starts, naming the repository and git's own message.
#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "serve/benchmark_config.hpp"

namespace magpie::serve {

// A URL (scheme://...), scp-style `user@host:path`, or a path ending in .git.
bool is_git_remote(const std::string& entry);

// repos_base_dir, else ~/.cache/magpie/repos (as the public tool).
std::filesystem::path repos_base_dir(const GapSettings& gap);

struct SourceRepos {
  std::vector<std::string> paths;  // kernel_source_repos with each remote replaced by its checkout
  std::vector<std::string> notes;  // what was cloned or reused, remotes left out
};

// Throws Error(kUnreachable) when git cannot clone a repository (exit 7) and
// Error(kNotFound) when git is not installed (exit 3).
SourceRepos prepare_source_repos(const GapSettings& gap, const std::atomic<bool>* cancel = nullptr);

}  // namespace magpie::serve
