#pragma once
// What a developer needs beside a kernel's source to work on it: a permalink
// to the line at the checked-out commit, the repository's test for it, the
// eager PyTorch op(s) it stands for and a Triton implementation to compare
// against. Filled into Magpie's upstream_url, test_file, test_cmd,
// baseline_ref_* and triton_ref_* columns (docs/KERNEL_SOURCES.md says how
// each is found).
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/kernel_name.hpp"
#include "sources/source_index.hpp"

namespace magpie::sources {

struct KernelReferences {
  // https://github.com/<owner>/<repo>/blob/<commit>/<path>#L<line> (GitLab and
  // Bitbucket forms too); "" when the file is not in a git checkout with a
  // remote on a known host.
  std::string upstream_url;
  std::optional<SourceLocation> test;  // line 0: the file as a whole
  std::string test_cmd;                // run from the repository root
  std::optional<SourceLocation> baseline;
  std::string baseline_symbol;  // "torch.ops.aten.gelu", or a reference def's name
  std::string baseline_kind;    // eager_fn, perftest_wrapper, or "" with no baseline
  std::optional<SourceLocation> triton;
  std::string triton_symbol;
  std::vector<std::string> notes;  // e.g. the source file differs from the linked commit
};

// Where a checkout came from: the answer of git, read once per repository.
struct RepoProvenance {
  std::string commit;                 // 40 hex digits; "" when not a git checkout
  std::string prefix;                 // the root's path inside the git work tree ("" or "sub/dir/")
  std::string remote;                 // origin's URL (else the first remote's), as configured
  std::vector<std::string> modified;  // files (relative to the root) that differ from HEAD
};

// "https://github.com/o/r/blob/<commit>/<path>#L<line>" from a remote URL in
// any of git's spellings (https, ssh://, scp-like user@host:path); "" for an
// unknown host or a local path.
std::string permalink(std::string_view remote, std::string_view commit, std::string_view path,
                      int line);

// "layernorm_kernels.cu" -> "layernorm"; "rms_norm_kernel" -> "rms_norm": the
// word a test file or a Triton counterpart would carry.
std::string kernel_key(std::string_view name);

class ReferenceFinder {
 public:
  // `launching ops` of a kernel come from the trace (Launching Op column).
  explicit ReferenceFinder(const SourceIndex& index);
  ~ReferenceFinder();
  ReferenceFinder(const ReferenceFinder&) = delete;
  ReferenceFinder& operator=(const ReferenceFinder&) = delete;

  KernelReferences find(const KernelName& kernel, const SourceMatch& match,
                        std::string_view launching_op) const;

  // git's answer for one root (cached); tests call it directly.
  const RepoProvenance& provenance(const std::string& root) const;

 private:
  struct TestFile {
    SourceLocation where;
    std::string stem;                 // lower case, "test_" / "_test" and underscores dropped
    std::vector<std::string> tokens;  // the name's words (name_tokens)
  };
  std::optional<SourceLocation> find_test(const SourceLocation& source, const KernelName& kernel,
                                          std::string& cmd, std::vector<std::string>& notes) const;
  const std::string& text_of(const SourceLocation& file) const;

  const SourceIndex& index_;
  std::vector<TestFile> tests_;
  mutable std::mutex mutex_;  // guards the caches below
  mutable std::map<std::string, std::unique_ptr<RepoProvenance>> provenance_;
  mutable std::map<std::string, std::unique_ptr<std::string>> texts_;
};

}  // namespace magpie::sources
