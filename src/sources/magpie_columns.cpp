#include "sources/magpie_columns.hpp"

#include <algorithm>
#include <cctype>

#include "sources/detail/repo_files.hpp"

namespace magpie::sources {
namespace {

enum Column : size_t {
  kKind,
  kCategory,
  kSourceRepo,
  kSourceFile,
  kUpstreamUrl,
  kTestFile,
  kTestCmd,
  kBaselineRefFile,
  kBaselineRefSymbol,
  kBaselineRefKind,
  kTritonRefFile,
  kTritonRefSymbol,
  kNotes,
  kSourceResolution,
  kSourceError,
  kColumnCount,
};

// Candidates spelled out in notes; the rest are counted.
constexpr size_t kCandidatesInNotes = 5;

std::string var_name_from(const std::filesystem::path& root, size_t index) {
  std::string name;
  for (char c : std::filesystem::path(detail::normalize_repo_root(root)).filename().string()) {
    name.push_back(std::isalnum(static_cast<unsigned char>(c))
                       ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                       : '_');
  }
  if (name.empty() || std::all_of(name.begin(), name.end(), [](char c) { return c == '_'; })) {
    return "REPO_" + std::to_string(index);
  }
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "REPO_" + name;
  return name;
}

std::string repo_ref(std::string_view root, const RepoVars& vars) {
  std::string_view var = vars.var_for(root);
  return std::string(var.empty() ? root : var);
}

std::string path_ref(const SourceLocation& loc, const RepoVars& vars) {
  return repo_ref(loc.repo, vars) + "/" + loc.file + ":" + std::to_string(loc.line);
}

std::string_view resolution(Confidence c) {
  switch (c) {
    case Confidence::kExact:
    case Confidence::kPartial:
      return "resolved";
    case Confidence::kLibraryOwned:
      return "unsupported";
    case Confidence::kAmbiguous:
    case Confidence::kNotFound:
      return "unresolved";
  }
  return "unresolved";
}

std::string notes_for(const SourceMatch& match, const RepoVars& vars) {
  std::string out(to_string(match.confidence));
  if (match.candidate_count > 1)
    out += " (" + std::to_string(match.candidate_count) + " candidates)";
  out += ": " + match.note;
  if (match.candidate_count > 1) {
    const size_t shown = std::min(match.candidates.size(), kCandidatesInNotes);
    for (size_t i = 0; i < shown; ++i)
      out += (i == 0 ? ": " : "; ") + path_ref(match.candidates[i], vars);
    if (match.candidate_count > shown) {
      out += "; +" + std::to_string(match.candidate_count - shown) + " more";
    }
  }
  return out;
}

}  // namespace

std::string_view RepoVars::var_for(std::string_view root) const {
  for (const auto& [path, var] : entries) {
    if (path == root) return var;
  }
  return {};
}

RepoVars make_repo_vars(const std::vector<std::filesystem::path>& repos) {
  RepoVars vars;
  for (size_t i = 0; i < repos.size(); ++i) {
    const std::string root = detail::normalize_repo_root(repos[i]);
    if (!vars.var_for(root).empty()) continue;  // the same repository twice
    const std::string base = "$" + var_name_from(repos[i], i);
    std::string var = base;
    for (int n = 2; std::any_of(vars.entries.begin(), vars.entries.end(),
                                [&](const auto& e) { return e.second == var; });
         ++n) {
      var = base + "_" + std::to_string(n);
    }
    vars.entries.emplace_back(root, std::move(var));
  }
  return vars;
}

std::vector<std::string> magpie_source_columns_header() {
  return {"kind",
          "category",
          "source_repo",
          "source_file",
          "upstream_url",
          "test_file",
          "test_cmd",
          "baseline_ref_file",
          "baseline_ref_symbol",
          "baseline_ref_kind",
          "triton_ref_file",
          "triton_ref_symbol",
          "notes",
          "source_resolution",
          "source_error"};
}

std::vector<std::string> magpie_source_columns(const KernelName& kernel, const SourceMatch& match,
                                               const RepoVars& vars, const KernelReferences& refs) {
  std::vector<std::string> row(kColumnCount);
  row[kKind] = kernel.magpie_kind;
  row[kCategory] = kernel.magpie_category;
  const std::string_view res = resolution(match.confidence);
  if (res == "resolved" && !match.candidates.empty()) {
    row[kSourceRepo] = repo_ref(match.candidates.front().repo, vars);
    row[kSourceFile] = path_ref(match.candidates.front(), vars);
  }
  row[kNotes] = notes_for(match, vars);
  // torch.compile: the compiled module that launches the kernel is its call site.
  for (size_t i = 0; i < match.call_sites.size() && i < kCandidatesInNotes; ++i)
    row[kNotes] += (i == 0 ? "; called from " : ", ") + path_ref(match.call_sites[i], vars) +
                   " (Inductor output code)";
  row[kUpstreamUrl] = refs.upstream_url;
  if (refs.test) {
    row[kTestFile] = repo_ref(refs.test->repo, vars) + "/" + refs.test->file;
    row[kTestCmd] = "cd " + repo_ref(refs.test->repo, vars) + " && " + refs.test_cmd;
  }
  if (refs.baseline) row[kBaselineRefFile] = path_ref(*refs.baseline, vars);
  row[kBaselineRefSymbol] = refs.baseline_symbol;
  row[kBaselineRefKind] = refs.baseline_kind;
  if (refs.triton) {
    row[kTritonRefFile] = path_ref(*refs.triton, vars);
    row[kTritonRefSymbol] = refs.triton_symbol;
  }
  for (const std::string& note : refs.notes) row[kNotes] += "; " + note;
  row[kSourceResolution] = std::string(res);
  if (res == "unresolved") row[kSourceError] = match.note;
  return row;
}

}  // namespace magpie::sources
