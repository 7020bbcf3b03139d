// SourceIndex::find: turning index hits into a match with a confidence.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <tuple>
#include <unordered_set>

#include "sources/detail/source_index_impl.hpp"
#include "sources/source_index.hpp"

namespace magpie::sources {
namespace {

using Impl = SourceIndex::Impl;
using detail::SiteKind;
using KindSet = std::vector<SiteKind>;

// Definitions to trust first, then weaker kinds, per family: a C++ kernel
// is a __global__ function (or, for CK/CUTLASS, a kernel class template); a
// Triton kernel is a decorated def in its own file, then a copy embedded in
// Inductor output code (a debug folder keeps only that), then any def. A bare
// name is Triton's family but may as well be an extern "C" __global__ kernel:
// both are trusted alike, and a name defined both ways is ambiguous.
std::vector<KindSet> definition_tiers(KernelFamily family) {
  switch (family) {
    case KernelFamily::kTriton:
      return {KindSet{SiteKind::kTritonJit, SiteKind::kGlobal},
              KindSet{SiteKind::kTritonInOutputCode}, KindSet{SiteKind::kPythonDef}};
    case KernelFamily::kInductor:
      return {KindSet{SiteKind::kTritonJit}, KindSet{SiteKind::kTritonInOutputCode},
              KindSet{SiteKind::kPythonDef}};
    case KernelFamily::kUnknown:
      return {KindSet{SiteKind::kGlobal, SiteKind::kTritonJit},
              KindSet{SiteKind::kTritonInOutputCode},
              KindSet{SiteKind::kPythonDef, SiteKind::kTemplate}};
    default:
      return {KindSet{SiteKind::kGlobal}, KindSet{SiteKind::kTemplate}};
  }
}

// Near names are only worth reporting among real kernel definitions; class
// templates and the like would drown them.
KindSet near_name_kinds(KernelFamily family) {
  switch (family) {
    case KernelFamily::kTriton:
      return {SiteKind::kTritonJit, SiteKind::kGlobal, SiteKind::kTritonInOutputCode,
              SiteKind::kPythonDef};
    case KernelFamily::kInductor:
      return {SiteKind::kTritonJit, SiteKind::kTritonInOutputCode, SiteKind::kPythonDef};
    case KernelFamily::kUnknown:
      return {SiteKind::kGlobal, SiteKind::kTritonJit, SiteKind::kTritonInOutputCode,
              SiteKind::kPythonDef};
    default:
      return {SiteKind::kGlobal};
  }
}

bool contains(const KindSet& kinds, SiteKind kind) {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::string_view family_label(KernelFamily family) {
  switch (family) {
    case KernelFamily::kCublas:
      return "cuBLAS";
    case KernelFamily::kCutlass:
      return "CUTLASS";
    case KernelFamily::kCudnn:
      return "cuDNN/MIOpen";
    case KernelFamily::kFlashAttention:
      return "FlashAttention";
    case KernelFamily::kNccl:
      return "NCCL/RCCL";
    case KernelFamily::kTensile:
      return "Tensile/hipBLASLt";
    case KernelFamily::kCk:
      return "Composable Kernel";
    case KernelFamily::kAiter:
      return "aiter";
    case KernelFamily::kAtenNative:
      return "ATen (at::native)";
    case KernelFamily::kMemcpy:
      return "runtime copy";
    default:
      return "vendor library";
  }
}

struct Candidate {
  const Impl::Site* site;
  size_t score;  // lower is closer
};

SourceLocation to_location(const Impl& impl, const Impl::Site& s) {
  const auto& [repo, file] = impl.files[s.file];
  return {impl.repos[repo], file, static_cast<int>(s.line), std::string(detail::to_string(s.kind))};
}

// Sorted by closeness then path, duplicates (same file and line) dropped,
// capped, with the true count kept.
void fill_candidates(const Impl& impl, std::vector<Candidate> found, SourceMatch& match) {
  auto key = [&](const Candidate& c) {
    return std::tie(c.score, impl.files[c.site->file].first, impl.files[c.site->file].second,
                    c.site->line);
  };
  std::sort(found.begin(), found.end(),
            [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  found.erase(std::unique(found.begin(), found.end(),
                          [](const Candidate& a, const Candidate& b) {
                            return a.site->file == b.site->file && a.site->line == b.site->line;
                          }),
              found.end());
  match.candidate_count = found.size();
  for (size_t i = 0; i < found.size() && i < SourceMatch::kMaxCandidates; ++i) {
    match.candidates.push_back(to_location(impl, *found[i].site));
  }
}

std::vector<Candidate> sites_named(const Impl& impl, std::string_view name, const KindSet& kinds,
                                   size_t score = 0) {
  std::vector<Candidate> out;
  auto it = impl.by_name.find(name);
  if (it == impl.by_name.end()) return out;
  for (const Impl::Site& s : it->second) {
    if (contains(kinds, s.kind)) out.push_back({&s, score});
  }
  return out;
}

// "_fwd_kernel_0" -> "_fwd_kernel", "triton_poi_fused_add_0" -> "triton_poi_fused_add".
std::string_view strip_number_suffix(std::string_view s) {
  size_t end = s.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(s[end - 1]))) --end;
  if (end == s.size() || end < 2 || s[end - 1] != '_') return s;
  return s.substr(0, end - 1);
}

bool is_boundary_start(std::string_view s, size_t i) {
  return i == 0 || s[i - 1] == '_' || s[i] == '_';
}
bool is_boundary_end(std::string_view s, size_t j) {
  return j == s.size() || s[j] == '_' || s[j - 1] == '_' ||
         std::isdigit(static_cast<unsigned char>(s[j]));
}

// A near name must share two thirds of the longer name, at word edges, so
// "vector" is no near name of "vector_add" nor "kernel" of "rms_norm_kernel".
bool near_enough(size_t shorter, size_t longer) {
  return shorter >= 4 && shorter * 3 >= longer * 2;
}

std::vector<Candidate> near_definitions(const Impl& impl, std::string_view symbol,
                                        const KindSet& kinds) {
  std::unordered_set<std::string_view> names;
  const std::string_view stripped = strip_number_suffix(symbol);
  if (stripped != symbol) names.insert(stripped);

  // Definitions whose name contains the symbol (or its stripped form).
  const std::string& blob = impl.definition_names;
  const char* const blob_end = blob.data() + blob.size();
  std::vector<std::string_view> needles{symbol};
  if (stripped != symbol) needles.push_back(stripped);
  for (std::string_view needle : needles) {
    for (const char* hit = blob.data(); hit < blob_end;) {
      hit = static_cast<const char*>(
          memmem(hit, static_cast<size_t>(blob_end - hit), needle.data(), needle.size()));
      if (!hit) break;
      const auto offset = static_cast<uint32_t>(hit - blob.data());
      const auto it = std::upper_bound(impl.name_starts.begin(), impl.name_starts.end(), offset);
      const uint32_t start = *(it - 1);
      const uint32_t end = it == impl.name_starts.end() ? static_cast<uint32_t>(blob.size()) : *it;
      const std::string_view name(blob.data() + start, end - 1 - start);  // without the '\n'
      const size_t pos = offset - start;
      const bool at_edges = (pos == 0 || name[pos - 1] == '_' || needle.front() == '_') &&
                            (is_boundary_end(name, pos + needle.size()) || needle.back() == '_');
      if (at_edges && near_enough(needle.size(), name.size())) {
        names.insert(name);
        hit = blob.data() + end;  // next name
      } else {
        ++hit;  // a later occurrence in the same name may sit at word edges
      }
    }
  }
  // Definitions whose name the symbol contains.
  for (size_t i = 0; i < symbol.size(); ++i) {
    if (!is_boundary_start(symbol, i)) continue;
    for (size_t j = symbol.size(); j > i; --j) {
      if (j - i == symbol.size() || !near_enough(j - i, symbol.size())) continue;
      if (is_boundary_end(symbol, j)) names.insert(symbol.substr(i, j - i));
    }
  }

  std::vector<Candidate> out;
  for (std::string_view name : names) {
    const size_t score =
        name.size() > symbol.size() ? name.size() - symbol.size() : symbol.size() - name.size();
    for (const Candidate& c : sites_named(impl, name, kinds, score)) out.push_back(c);
  }
  return out;
}

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

// Byte-identical files (the same kernel file cached twice) are one definition.
size_t drop_identical_files(const Impl& impl, std::vector<Candidate>& defs) {
  const size_t before = defs.size();
  std::vector<Candidate> kept;
  for (const Candidate& c : defs) {
    const uint64_t h = impl.file_hash[c.site->file];
    const bool copy = std::any_of(kept.begin(), kept.end(), [&](const Candidate& k) {
      return k.site->line == c.site->line && impl.file_hash[k.site->file] == h;
    });
    if (!copy) kept.push_back(c);
  }
  defs = std::move(kept);
  return before - defs.size();
}

bool is_triton_like(KernelFamily f) {
  return f == KernelFamily::kTriton || f == KernelFamily::kInductor || f == KernelFamily::kUnknown;
}

}  // namespace

std::string_view to_string(Confidence confidence) {
  switch (confidence) {
    case Confidence::kExact:
      return "exact";
    case Confidence::kPartial:
      return "partial";
    case Confidence::kAmbiguous:
      return "ambiguous";
    case Confidence::kLibraryOwned:
      return "library-owned";
    case Confidence::kNotFound:
      return "not-found";
  }
  return "not-found";
}

SourceMatch SourceIndex::find(const KernelName& kernel) const {
  const Impl& impl = *impl_;
  const std::string& symbol = kernel.search_symbol;
  SourceMatch match;
  if (symbol.empty()) {
    match.confidence = kernel.library_owned ? Confidence::kLibraryOwned : Confidence::kNotFound;
    match.note = kernel.family == KernelFamily::kMemcpy
                     ? "runtime memory copy/set: no kernel source"
                     : "no identifier to search for in " + in_quotes(kernel.raw);
    return match;
  }

  const auto tiers = definition_tiers(kernel.family);
  for (const KindSet& tier : tiers) {
    std::vector<Candidate> defs = sites_named(impl, symbol, tier);
    if (defs.empty()) continue;
    // Inductor caches can hold one kernel file twice; C++ copies (vendored
    // trees) stay separate definitions.
    const bool triton =
        kernel.family == KernelFamily::kTriton || kernel.family == KernelFamily::kInductor;
    const size_t copies = triton ? drop_identical_files(impl, defs) : 0;
    fill_candidates(impl, std::move(defs), match);
    const std::string kind = match.candidates.front().kind;
    const bool own_file = !contains(tier, SiteKind::kTritonInOutputCode);
    if (own_file && is_triton_like(kernel.family)) {
      std::vector<Candidate> callers =
          sites_named(impl, symbol, KindSet{SiteKind::kTritonInOutputCode});
      std::sort(callers.begin(), callers.end(), [&](const Candidate& a, const Candidate& b) {
        return impl.files[a.site->file] < impl.files[b.site->file];
      });
      for (const Candidate& c : callers) match.call_sites.push_back(to_location(impl, *c.site));
    }
    if (match.candidate_count == 1) {
      match.confidence = Confidence::kExact;
      match.note = "one " + kind + " definition of " + in_quotes(symbol);
      if (copies > 0) match.note += " (+" + std::to_string(copies) + " identical file(s))";
      if (!match.call_sites.empty()) {
        match.note += "; embedded and launched by " + std::to_string(match.call_sites.size()) +
                      " Inductor output-code module(s)";
      }
    } else {
      match.confidence = Confidence::kAmbiguous;
      match.note = std::to_string(match.candidate_count) + " definitions of " + in_quotes(symbol) +
                   "; not choosing one";
    }
    if (kernel.library_owned) {
      match.note += "; " + std::string(family_label(kernel.family)) +
                    " kernels are library-owned, but the given repos define this symbol";
    }
    return match;
  }

  if (kernel.library_owned) {
    match.confidence = Confidence::kLibraryOwned;
    match.note = std::string(family_label(kernel.family)) +
                 " kernel: library-owned, no source in the given repos";
    return match;
  }

  std::vector<Candidate> uses =
      sites_named(impl, symbol, KindSet{SiteKind::kLaunch, SiteKind::kRegistration});
  if (!uses.empty()) {
    fill_candidates(impl, std::move(uses), match);
    match.confidence = Confidence::kPartial;
    match.note = "no definition of " + in_quotes(symbol) + " found; launched or registered at " +
                 std::to_string(match.candidate_count) + " site(s)";
    return match;
  }

  std::vector<Candidate> near = near_definitions(impl, symbol, near_name_kinds(kernel.family));
  if (!near.empty()) {
    fill_candidates(impl, std::move(near), match);
    match.confidence = Confidence::kPartial;
    match.note = "no definition of " + in_quotes(symbol) + "; " +
                 std::to_string(match.candidate_count) + " similar definition(s)";
    return match;
  }

  match.confidence = Confidence::kNotFound;
  match.note = "no definition of " + in_quotes(symbol) + " in " +
               std::to_string(impl.files_scanned) + " files of the given repos";
  return match;
}

std::vector<SourceIndex::NamedSite> SourceIndex::triton_definitions_containing(
    std::string_view key, size_t max, size_t* count) const {
  const Impl& impl = *impl_;
  std::vector<std::string_view> names;
  const std::string& blob = impl.definition_names;
  const char* const blob_end = blob.data() + blob.size();
  for (const char* hit = blob.data(); !key.empty() && hit < blob_end;) {
    hit = static_cast<const char*>(
        memmem(hit, static_cast<size_t>(blob_end - hit), key.data(), key.size()));
    if (!hit) break;
    const auto offset = static_cast<uint32_t>(hit - blob.data());
    const auto it = std::upper_bound(impl.name_starts.begin(), impl.name_starts.end(), offset);
    const uint32_t start = *(it - 1);
    const uint32_t end = it == impl.name_starts.end() ? static_cast<uint32_t>(blob.size()) : *it;
    const std::string_view name(blob.data() + start, end - 1 - start);
    const size_t pos = offset - start;
    const bool starts = pos == 0 || name[pos - 1] == '_';
    const size_t after = pos + key.size();
    const bool ends = after == name.size() || name[after] == '_' ||
                      std::isdigit(static_cast<unsigned char>(name[after]));
    if (starts && ends && after <= name.size()) {
      names.push_back(name);
      hit = blob.data() + end;
    } else {
      ++hit;
    }
  }
  std::vector<std::pair<std::string_view, const Impl::Site*>> found;
  for (std::string_view name : names) {
    for (const Candidate& c : sites_named(impl, name, KindSet{SiteKind::kTritonJit}))
      found.emplace_back(name, c.site);
  }
  std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) {
    return std::make_tuple(a.first.size(), impl.files[a.second->file], a.second->line) <
           std::make_tuple(b.first.size(), impl.files[b.second->file], b.second->line);
  });
  if (count) *count = found.size();
  std::vector<NamedSite> out;
  for (size_t i = 0; i < found.size() && i < max; ++i)
    out.push_back({std::string(found[i].first), to_location(impl, *found[i].second)});
  return out;
}

}  // namespace magpie::sources
