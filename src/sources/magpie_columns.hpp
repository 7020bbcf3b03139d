#pragma once
// The fifteen kernel-source columns Magpie appends to gap_analysis.csv with
// --find-kernel-sources (docs/MAGPIE_COMPATIBILITY.md §5), and the $VAR path mappings
// they are written with.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sources/kernel_name.hpp"
#include "sources/kernel_references.hpp"
#include "sources/source_index.hpp"

namespace magpie::sources {

struct RepoVars {
  // (normalised absolute root, "$VAR"), in the order the repositories were given.
  std::vector<std::pair<std::string, std::string>> entries;
  // "$VAR" for a root as SourceLocation::repo spells it; "" when unknown.
  std::string_view var_for(std::string_view root) const;
};

// One variable per repository, named after its directory ("/src/vllm" ->
// "$VLLM"); "$REPO_<i>" when the name gives nothing; "_2", "_3"... on clashes.
RepoVars make_repo_vars(const std::vector<std::filesystem::path>& repos);

// kind, category, source_repo, source_file, upstream_url, test_file, test_cmd,
// baseline_ref_file, baseline_ref_symbol, baseline_ref_kind, triton_ref_file,
// triton_ref_symbol, notes, source_resolution, source_error
std::vector<std::string> magpie_source_columns_header();

// Values in header order. source_resolution: resolved (exact, partial),
// unresolved (not-found, ambiguous), unsupported (library-owned). Paths are
// "$VAR/rel/path:line"; test_cmd starts "cd $VAR && ". Columns we have
// nothing for are empty.
std::vector<std::string> magpie_source_columns(const KernelName& kernel, const SourceMatch& match,
                                               const RepoVars& vars,
                                               const KernelReferences& refs = {});

}  // namespace magpie::sources
