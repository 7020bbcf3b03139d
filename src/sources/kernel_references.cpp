#include "sources/kernel_references.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <tuple>

#include "core/child_process.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::sources {
namespace {

std::string lower_without_underscores(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// Lower-case words of a name: letter runs, split at camelCase humps
// ("rmsnorm2dFusedAddQuant" -> rmsnorm, fused, add, quant); one-letter runs dropped.
std::vector<std::string> name_tokens(std::string_view name) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (word.size() >= 2 && std::find(out.begin(), out.end(), word) == out.end())
      out.push_back(word);
    word.clear();
  };
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (!std::isalpha(c)) {
      flush();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1]))) flush();
    word.push_back(static_cast<char>(std::tolower(c)));
  }
  flush();
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.emplace_back(text, start, end - start);
    start = end + 1;
  }
  return out;
}

// git's answer, or "" when git fails (not a checkout, git missing).
std::string git(const std::string& root, std::vector<std::string> args) {
  ProcessSpec spec;
  spec.argv = {"git", "-C", root};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.capture_output = true;
  spec.timeout = std::chrono::milliseconds(20000);
  spec.env["GIT_TERMINAL_PROMPT"] = "0";
  spec.env["LC_ALL"] = "C";
  ProcessResult r = run_process(spec);
  return r.ok() ? r.output : std::string();
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)); }

// How often `words` ("rotary_embedding") stands in `text` as whole
// underscore-separated words: alone, or inside a longer identifier
// ("aiter.rotary_embedding_fwd(", "batched_rotary_embedding").
size_t count_at_word_edges(std::string_view text, std::string_view words) {
  size_t n = 0;
  for (size_t pos = text.find(words); pos != std::string_view::npos;
       pos = text.find(words, pos + 1)) {
    const size_t after = pos + words.size();
    if ((pos == 0 || !is_alnum(text[pos - 1])) && (after == text.size() || !is_alnum(text[after])))
      ++n;
  }
  return n;
}

bool in_kernel_test_folder(const std::string& file) {
  return ("/" + file).find("/tests/kernels/") != std::string::npos ||
         ("/" + file).find("/op_tests/") != std::string::npos;
}

// A reference implementation's name as test files spell them: ref_*, *_ref,
// torch_*, *_torch, naive_*, *_naive, *_native, reference_*, *_reference, run_torch.
bool is_reference_name(std::string_view name) {
  for (std::string_view p : {"ref_", "torch_", "naive_", "reference_"})
    if (name.starts_with(p)) return true;
  for (std::string_view s : {"_ref", "_torch", "_naive", "_native", "_reference"})
    if (name.ends_with(s)) return true;
  return name == "run_torch";
}

// "aten.gelu, aten.t" inside "... Original ATen: [aten.gelu, aten.t]".
std::vector<std::string> original_aten(std::string_view line) {
  std::vector<std::string> out;
  const size_t at = line.find("Original ATen: [");
  if (at == std::string_view::npos) return out;
  std::string_view list = line.substr(at + 16);
  list = list.substr(0, list.find(']'));
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      std::string op = "torch.ops." + std::string(item);
      if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(std::move(op));
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::string joined(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

}  // namespace

std::string permalink(std::string_view remote, std::string_view commit, std::string_view path,
                      int line) {
  std::string_view r = remote;
  while (!r.empty() && (r.back() == '\n' || r.back() == '/' || r.back() == ' ')) r.remove_suffix(1);
  if (r.ends_with(".git")) r.remove_suffix(4);
  std::string_view host, repo_path;
  if (const size_t scheme = r.find("://"); scheme != std::string_view::npos) {
    std::string_view rest = r.substr(scheme + 3);
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return {};
    host = rest.substr(0, slash);
    repo_path = rest.substr(slash + 1);
    if (const size_t at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
    if (const size_t colon = host.find(':'); colon != std::string_view::npos)
      host = host.substr(0, colon);
  } else if (const size_t colon = r.find(':');
             colon != std::string_view::npos && r.find('/') > colon) {
    host = r.substr(0, colon);  // scp-like: git@github.com:owner/repo
    repo_path = r.substr(colon + 1);
    if (const size_t at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
  } else {
    return {};  // a local path
  }
  if (host.empty() || repo_path.empty() || commit.empty()) return {};
  const std::string base = "https://" + std::string(host) + "/" + std::string(repo_path);
  const std::string anchor_line = std::to_string(line);
  if (host == "github.com" || host.ends_with(".github.com"))
    return base + "/blob/" + std::string(commit) + "/" + std::string(path) +
           (line > 0 ? "#L" + anchor_line : "");
  if (host.find("gitlab") != std::string_view::npos)
    return base + "/-/blob/" + std::string(commit) + "/" + std::string(path) +
           (line > 0 ? "#L" + anchor_line : "");
  if (host == "bitbucket.org")
    return base + "/src/" + std::string(commit) + "/" + std::string(path) +
           (line > 0 ? "#lines-" + anchor_line : "");
  return {};  // a host whose web layout we do not know
}

std::string kernel_key(std::string_view name) {
  if (const size_t slash = name.rfind('/'); slash != std::string_view::npos)
    name.remove_prefix(slash + 1);
  if (const size_t dot = name.find('.'); dot != std::string_view::npos) name = name.substr(0, dot);
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  for (bool changed = true; changed;) {
    changed = false;
    size_t end = name.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
    if (end < name.size() && end > 1 && name[end - 1] == '_') {
      name = name.substr(0, end - 1);
      changed = true;
    }
    for (std::string_view suffix : {"_kernels", "_kernel", "Kernel", "_impl", "_cuda", "_hip"}) {
      if (name.size() > suffix.size() && name.ends_with(suffix)) {
        name.remove_suffix(suffix.size());
        changed = true;
      }
    }
    while (!name.empty() && name.back() == '_') {
      name.remove_suffix(1);
      changed = true;
    }
  }
  return std::string(name);
}

ReferenceFinder::ReferenceFinder(const SourceIndex& index) : index_(index) {
  for (SourceLocation& t : index.python_test_files()) {
    std::string_view name = t.file;
    if (const size_t slash = name.rfind('/'); slash != std::string_view::npos)
      name.remove_prefix(slash + 1);
    name.remove_suffix(3);  // ".py"
    if (name.starts_with("test_"))
      name.remove_prefix(5);
    else if (name.ends_with("_test"))
      name.remove_suffix(5);
    tests_.push_back({std::move(t), lower_without_underscores(name), name_tokens(name)});
  }
}

ReferenceFinder::~ReferenceFinder() = default;

const RepoProvenance& ReferenceFinder::provenance(const std::string& root) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = provenance_[root];
  if (slot) return *slot;
  slot = std::make_unique<RepoProvenance>();
  const std::vector<std::string> head = lines_of(git(root, {"rev-parse", "HEAD", "--show-prefix"}));
  if (head.empty() || head[0].size() != 40 ||
      head[0].find_first_not_of("0123456789abcdef") != std::string::npos)
    return *slot;
  slot->commit = head[0];
  if (head.size() > 1) slot->prefix = head[1];
  const std::vector<std::string> remotes = lines_of(git(root, {"remote"}));
  if (!remotes.empty()) {
    const std::string name = std::find(remotes.begin(), remotes.end(), "origin") != remotes.end()
                                 ? std::string("origin")
                                 : remotes.front();
    const auto url = lines_of(git(root, {"remote", "get-url", name}));
    if (!url.empty()) slot->remote = url.front();
  }
  slot->modified = lines_of(git(root, {"diff", "--name-only", "--relative", "HEAD"}));
  return *slot;
}

const std::string& ReferenceFinder::text_of(const SourceLocation& file) const {
  const std::string path = file.repo + "/" + file.file;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = texts_[path];
  if (!slot) {
    slot = std::make_unique<std::string>();
    try {
      if (std::filesystem::file_size(path) <= SourceIndex::kMaxFileBytes)
        *slot = std::string(read_file(path).view());
    } catch (const std::exception&) {  // vanished since indexing: no text, no reference from it
    }
  }
  return *slot;
}

std::optional<SourceLocation> ReferenceFinder::find_test(const SourceLocation& source,
                                                         const KernelName& kernel, std::string& cmd,
                                                         std::vector<std::string>& notes) const {
  const std::string symbol_key = kernel_key(kernel.search_symbol);
  const std::string file_key = kernel_key(source.file);
  const std::vector<std::string> q = name_tokens(symbol_key), f = name_tokens(file_key);
  const std::string q_joined = lower_without_underscores(symbol_key);
  const std::string f_joined = lower_without_underscores(file_key);
  const bool triton_kernel =
      kernel.family == KernelFamily::kTriton || kernel.family == KernelFamily::kInductor;
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  // Tests of Triton implementations sit in triton folders: last for other kernels.
  auto place_bonus = [&](const std::string& file) {
    const bool triton_folder = ("/" + file).find("/triton") != std::string::npos;
    return (in_kernel_test_folder(file) ? 2 : 0) + (triton_folder ? (triton_kernel ? 2 : -8) : 0);
  };

  // By name: each of the kernel's words in the test's name counts 4, each of
  // its file's words 2, each other word in the test's name -1; the whole
  // kernel name (6) or file name (4) inside the test's name counts more.
  // Then, if no name matches, test files that name the kernel's word (1-3).
  std::vector<std::pair<int, const TestFile*>> scored;
  for (const TestFile& t : tests_) {
    if (t.where.repo != source.repo) continue;
    int score = 0;
    bool telling = false;  // a word of 4+ letters, or a whole name, matched
    for (const std::string& w : t.tokens) {
      if (has(q, w))
        score += 4;
      else if (has(f, w))
        score += 2;
      else
        score -= 1;
      if ((has(q, w) || has(f, w)) && w.size() >= 4) telling = true;
    }
    if (q_joined.size() >= 4 && t.stem.find(q_joined) != std::string::npos) {
      score += 6;
      telling = true;
    }
    if (f_joined.size() >= 4 && t.stem.find(f_joined) != std::string::npos) {
      score += 4;
      telling = true;
    }
    if (telling && score > 0) scored.emplace_back(score + place_bonus(t.where.file), &t);
  }
  if (scored.empty() && symbol_key.size() >= 4) {
    for (const TestFile& t : tests_) {
      if (t.where.repo != source.repo) continue;
      // More mentions, more likely the kernel's own test (at most +2).
      const size_t mentions = count_at_word_edges(text_of(t.where), symbol_key);
      if (mentions > 0)
        scored.emplace_back(
            static_cast<int>(std::min<size_t>(mentions, 3)) + place_bonus(t.where.file), &t);
    }
  }
  if (scored.empty()) return std::nullopt;
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-a.first, a.second->where.file.size(), a.second->where.file) <
           std::make_tuple(-b.first, b.second->where.file.size(), b.second->where.file);
  });
  const TestFile& best = *scored.front().second;
  const size_t ties =
      static_cast<size_t>(std::count_if(scored.begin(), scored.end(), [&](const auto& s) {
        return s.first == scored.front().first;
      }));
  if (ties > 1)
    notes.push_back("test: " + std::to_string(ties) +
                    " test files match as well; the shortest path taken");
  cmd = "python -m pytest " + best.where.file;
  // -k narrows to the kernel's own tests when a test function is named after it.
  if (symbol_key.size() >= 4) {
    const std::string& text = text_of(best.where);
    for (size_t pos = text.find("def test_"); pos != std::string::npos;
         pos = text.find("def test_", pos + 1)) {
      const size_t paren = text.find('(', pos);
      if (paren == std::string::npos) break;
      if (std::string_view(text).substr(pos, paren - pos).find(symbol_key) !=
          std::string_view::npos) {
        cmd += " -k " + symbol_key;
        break;
      }
    }
  }
  return best.where;
}

KernelReferences ReferenceFinder::find(const KernelName& kernel, const SourceMatch& match,
                                       std::string_view launching_op) const {
  KernelReferences refs;
  const bool resolved =
      (match.confidence == Confidence::kExact || match.confidence == Confidence::kPartial) &&
      !match.candidates.empty();
  const SourceLocation* source = resolved ? &match.candidates.front() : nullptr;

  if (source) {
    const RepoProvenance& prov = provenance(source->repo);
    refs.upstream_url =
        permalink(prov.remote, prov.commit, prov.prefix + source->file, source->line);
    if (!refs.upstream_url.empty() &&
        std::find(prov.modified.begin(), prov.modified.end(), source->file) != prov.modified.end())
      refs.notes.push_back("the source file has local changes: upstream_url shows commit " +
                           prov.commit.substr(0, 12) + "'s version");
    refs.test = find_test(*source, kernel, refs.test_cmd, refs.notes);
  }

  // torch.compile: the ATen ops Inductor fused into this kernel, from the
  // output code's comment above the kernel's async_compile.triton(...).
  const SourceLocation* output_code = !match.call_sites.empty() ? &match.call_sites.front()
                                      : (source && source->kind == "triton.jit (output code)")
                                          ? source
                                          : nullptr;
  if (output_code) {
    const std::vector<std::string> lines = lines_of(text_of(*output_code));
    const std::string definition = kernel.search_symbol + " = async_compile.triton(";
    for (size_t i = 0; i < lines.size() && !refs.baseline; ++i) {
      if (lines[i].find(definition) == std::string::npos) continue;
      // The comment block above the definition (it can hold a long graph fragment).
      for (size_t back = 1; back <= i && lines[i - back].starts_with("#"); ++back) {
        std::vector<std::string> ops = original_aten(lines[i - back]);
        if (ops.empty()) continue;
        SourceLocation at = *output_code;
        at.line = static_cast<int>(i - back + 1);
        refs.baseline = at;
        refs.baseline_symbol = joined(ops, "; ");
        refs.baseline_kind = "eager_fn";
        break;
      }
    }
  }
  // A reference function in the kernel's test file.
  if (!refs.baseline && refs.test) {
    const std::vector<std::string> lines = lines_of(text_of(*refs.test));
    const std::string symbol_key = kernel_key(kernel.search_symbol);
    int chosen = -1;
    bool chosen_names_kernel = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t def = lines[i].find("def ");
      if (def == std::string::npos || lines[i].find_first_not_of(' ') != def) continue;
      const size_t paren = lines[i].find('(', def);
      if (paren == std::string::npos) continue;
      const std::string name = lines[i].substr(def + 4, paren - def - 4);
      if (!is_reference_name(name)) continue;
      const bool names_kernel =
          symbol_key.size() >= 4 && name.find(symbol_key) != std::string::npos;
      if (chosen < 0 || (names_kernel && !chosen_names_kernel)) {
        chosen = static_cast<int>(i);
        chosen_names_kernel = names_kernel;
        SourceLocation at = *refs.test;
        at.line = static_cast<int>(i + 1);
        refs.baseline = at;
        refs.baseline_symbol = name;
        const bool nested = def > 0;
        const bool perftest = i > 0 && lines[i - 1].find("@perftest") != std::string::npos;
        refs.baseline_kind = nested ? "inline_in_test" : perftest ? "perftest_wrapper" : "eager_fn";
      }
    }
  }
  // The eager ATen op that launched the kernel in the trace.
  if (!refs.baseline && launching_op.starts_with("aten::")) {
    launching_op.remove_prefix(6);
    refs.baseline_symbol = "torch.ops.aten." + std::string(launching_op);
    refs.baseline_kind = "eager_fn";
  }

  // A Triton implementation: the kernel itself when it is one, else a
  // Triton kernel in the repos named after it.
  const bool triton_family =
      kernel.family == KernelFamily::kTriton || kernel.family == KernelFamily::kInductor;
  if (source && triton_family && source->kind.starts_with("triton.jit")) {
    refs.triton = *source;
    refs.triton_symbol = kernel.search_symbol;
  } else if (!triton_family && source) {
    // Only for kernels placed in the repos: an unplaced library kernel's
    // generic name ("reduce_kernel") would pick an unrelated Triton kernel.
    const std::string key = kernel_key(kernel.search_symbol);
    if (key.size() >= 6) {
      size_t count = 0;
      auto found = index_.triton_definitions_containing(key, 1, &count);
      if (!found.empty()) {
        refs.triton = found.front().where;
        refs.triton_symbol = found.front().name;
        if (count > 1)
          refs.notes.push_back("triton ref: " + std::to_string(count) +
                               " Triton kernels are named after '" + key +
                               "'; the shortest name taken");
      }
    }
  }
  return refs;
}

}  // namespace magpie::sources
