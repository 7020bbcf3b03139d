#pragma once
// Kernel -> source search: one pass over the given repositories indexes every
// kernel definition (and launch/registration site) by identifier; lookups then
// say how sure they are instead of guessing.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sources/kernel_name.hpp"

namespace magpie::sources {

enum class Confidence { kExact, kPartial, kAmbiguous, kLibraryOwned, kNotFound };
// "exact", "partial", "ambiguous", "library-owned", "not-found".
std::string_view to_string(Confidence confidence);

struct SourceLocation {
  std::string repo;  // repository root, absolute and normalised
  std::string file;  // relative to repo, '/'-separated
  int line = 0;      // 1-based, of the identifier
  std::string kind;  // "__global__", "triton.jit", "launch_registration", "def", "template"
};

struct SourceMatch {
  Confidence confidence = Confidence::kNotFound;
  // exact: 1; ambiguous and partial: all, best first, capped at kMaxCandidates.
  std::vector<SourceLocation> candidates;
  size_t candidate_count = 0;  // before the cap
  std::string note;            // why, in words
  // Inductor output-code modules that embed and launch the kernel found
  // (torch.compile): where it is called from.
  std::vector<SourceLocation> call_sites;
  static constexpr size_t kMaxCandidates = 20;
};

class SourceIndex {
 public:
  // Scans repos recursively (see detail/repo_files.hpp for what is skipped),
  // reading and scanning files in parallel on `threads` threads (0: all).
  // Throws Error(kNotFound) for a repository that is not a directory.
  static SourceIndex build(const std::vector<std::filesystem::path>& repos, unsigned threads = 0);

  // Rules: one definition of the search symbol -> exact; several -> ambiguous
  // (all listed, none chosen); library families -> library-owned unless the
  // repos define the symbol; no definition but a launch/registration site or
  // a near name (suffix numbers, containment) -> partial; else not-found.
  SourceMatch find(const KernelName& kernel) const;

  // The roots searched, normalised, in the order given (duplicates dropped).
  const std::vector<std::string>& repos() const;
  // Python test files of the repos: test_*.py or *_test.py with a tests/,
  // test/ or op_tests/ folder on their path. Line 0.
  std::vector<SourceLocation> python_test_files() const;
  // Own-file @triton.jit definitions whose name holds `key` at word edges
  // ("rms_norm" in "_rms_norm_fwd_kernel"): shortest name first, then path;
  // at most `max`, the full count in *count.
  struct NamedSite {
    std::string name;
    SourceLocation where;
  };
  std::vector<NamedSite> triton_definitions_containing(std::string_view key, size_t max,
                                                       size_t* count) const;

  size_t files_scanned() const;
  size_t bytes_scanned() const;
  size_t definitions() const;    // definition sites (launch/registration sites not counted)
  size_t files_skipped() const;  // unreadable or larger than kMaxFileBytes
  static constexpr size_t kMaxFileBytes = size_t{64} << 20;

  struct Impl;  // defined in detail/source_index_impl.hpp

 private:
  explicit SourceIndex(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;  // immutable after build, so copies share it
};

}  // namespace magpie::sources
