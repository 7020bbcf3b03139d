#include "sources/detail/source_patterns.hpp"

#include <hs/hs.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstring>

#include "core/error.hpp"

namespace magpie::sources::detail {
namespace {

enum PatternId : unsigned {
  kPatGlobal,
  kPatPythonDef,
  kPatTritonDecorator,
  kPatBareJitDecorator,
  kPatChevronLaunch,
  kPatHipLaunch,
  kPatTorchRegistration,
  kPatRegisterDispatch,
  kPatTemplateClass,
  kPatternCount,
};

struct PatternSpec {
  const char* regex;
  unsigned flags;
};

// Each pattern ends just past the delimiter after the identifier we want (or
// at a keyword whose rest is read in code), so the end offset alone locates it:
// no start-of-match tracking, which would slow Hyperscan down.
constexpr std::array<PatternSpec, kPatternCount> kPatterns = {{
    // __global__, then return type, qualifiers, line breaks and attribute or
    // ALL_CAPS macro calls (C10_LAUNCH_BOUNDS_1(128)), up to "NAME(".
    {R"(__global__(?:[\s\w:<>,*&]|(?:[A-Z][A-Z0-9_]*|__launch_bounds__|__attribute__)\s*)"
     R"(\((?:[^()]|\([^()]*\))*\))*\()",
     0},
    {R"(^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\()", HS_FLAG_MULTILINE},
    {R"(@triton\.(?:jit|autotune|heuristics)\b)", 0},
    {R"(^[ \t]*@jit\b)", HS_FLAG_MULTILINE},
    {R"(<<<)", 0},
    {R"(hipLaunchKernelGGL\s*\(\s*\(?\s*[\w:]+[^\w:])", 0},
    {R"(\.(?:def|impl)\s*\(\s*"[\w:.]+[^\w:.])", 0},
    {R"(REGISTER_(?:\w+_)?DISPATCH\s*\(\s*\w+\s*,\s*&?\s*[\w:]+\s*\))", 0},
    // Only the keyword: a regex over the parameter list costs more than the
    // whole rest of the database, so template_class_name() reads the rest.
    {R"(template)", 0},
}};

// A decorator belongs to the next def if nothing else was defined in between
// and it is not absurdly far away (autotune config lists can be long).
constexpr uint64_t kMaxDecoratorDistance = 16384;
constexpr uint64_t kNone = ~uint64_t{0};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

struct Span {
  size_t begin = 0;
  size_t end = 0;
  bool empty() const { return begin == end; }
};

// The identifier that ends at `pos` (exclusive), whitespace before `pos` skipped.
Span identifier_before(std::string_view t, size_t pos) {
  while (pos > 0 && is_space(t[pos - 1])) --pos;
  const size_t end = pos;
  while (pos > 0 && is_ident_char(t[pos - 1])) --pos;
  if (pos < end && std::isdigit(static_cast<unsigned char>(t[pos]))) return {};
  return {pos, end};
}

// "NAME(...);" declares; anything else after the parameters defines.
bool is_declaration(std::string_view t, size_t open_paren) {
  const size_t limit = std::min(t.size(), open_paren + 65536);
  int depth = 0;
  size_t i = open_paren;
  for (; i < limit; ++i) {
    if (t[i] == '(') ++depth;
    if (t[i] == ')' && --depth == 0) break;
  }
  if (i >= limit) return false;
  for (++i; i < t.size() && is_space(t[i]); ++i) {
  }
  return i < t.size() && t[i] == ';';
}

bool is_attribute_keyword(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kKeywords = {
      "__launch_bounds__", "__attribute__", "__declspec", "alignas",
      "__align__",         "decltype",      "__global__"};
  return std::find(kKeywords.begin(), kKeywords.end(), name) != kKeywords.end();
}

// An attribute-like macro (C10_LAUNCH_BOUNDS_1, __launch_bounds__) between
// __global__ and the kernel's name, not the name itself.
bool is_attribute_like(std::string_view name) {
  const bool macro_case = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
  if (macro_case && name.find('_') != std::string_view::npos) return true;
  return is_attribute_keyword(name);
}

// Start of "NAME" in "NAME<T, U<V>> <<<"; returns the launch's identifier.
Span launched_identifier(std::string_view t, size_t chevron) {
  size_t pos = chevron;
  while (pos > 0 && is_space(t[pos - 1])) --pos;
  if (pos > 0 && t[pos - 1] == '>') {
    int depth = 0;
    const size_t floor = pos > 4096 ? pos - 4096 : 0;
    for (size_t i = pos; i-- > floor;) {
      const char c = t[i];
      if (c == ';' || c == '{' || c == '}') return {};
      if (c == '>') ++depth;
      if (c == '<' && --depth == 0) {
        pos = i;
        break;
      }
    }
    if (depth != 0) return {};
  }
  return identifier_before(t, pos);
}

// NAME in `.def("ns::NAME.overload(Tensor x) -> ()"`, ending just before `end`.
Span registered_identifier(std::string_view t, size_t end) {
  const size_t quote = t.rfind('"', end - 1);  // t[end] may itself be the closing quote
  if (quote == std::string_view::npos) return {};
  size_t begin = quote + 1;
  const size_t colons = t.substr(begin, end - begin).rfind("::");
  if (colons != std::string_view::npos) begin += colons + 2;
  size_t stop = begin;
  while (stop < end && is_ident_char(t[stop])) ++stop;
  return {begin, stop};
}

size_t skip_spaces(std::string_view t, size_t i) {
  while (i < t.size() && is_space(t[i])) ++i;
  return i;
}

bool keyword_at(std::string_view t, size_t i, std::string_view word) {
  return t.substr(i, word.size()) == word &&
         (i + word.size() == t.size() || !is_ident_char(t[i + word.size()]));
}

// NAME in "template <...> struct|class NAME [final] {" or "... : Base", read
// from just after the keyword "template"; empty for anything else (function
// templates, declarations, partial specialisations).
Span template_class_name(std::string_view t, size_t i) {
  i = skip_spaces(t, i);
  if (i >= t.size() || t[i] != '<') return {};
  const size_t limit = std::min(t.size(), i + 4096);
  int depth = 0;
  for (; i < limit; ++i) {
    const char c = t[i];
    if (c == ';' || c == '{' || c == '}') return {};
    if (c == '<') ++depth;
    if (c == '>' && --depth == 0) break;
  }
  if (i >= limit) return {};
  i = skip_spaces(t, i + 1);
  if (keyword_at(t, i, "struct")) {
    i += 6;
  } else if (keyword_at(t, i, "class")) {
    i += 5;
  } else {
    return {};
  }
  i = skip_spaces(t, i);
  Span name{i, i};
  while (name.end < t.size() && is_ident_char(t[name.end])) ++name.end;
  if (name.empty()) return {};
  i = skip_spaces(t, name.end);
  if (keyword_at(t, i, "final")) i = skip_spaces(t, i + 5);
  if (i >= t.size()) return {};
  if (t[i] == '{' || (t[i] == ':' && (i + 1 == t.size() || t[i + 1] != ':'))) return name;
  return {};
}

// Newlines in t[from, to): eight bytes per step (exact zero-byte test on
// word ^ "\n\n\n\n\n\n\n\n"), as line numbers are needed for every site.
size_t count_newlines(std::string_view t, size_t from, size_t to) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fULL;
  constexpr uint64_t kNewlines = 0x0a0a0a0a0a0a0a0aULL;
  size_t n = 0;
  size_t i = from;
  for (; i + 8 <= to; i += 8) {
    uint64_t w;
    std::memcpy(&w, t.data() + i, sizeof w);
    w ^= kNewlines;
    n += static_cast<size_t>(std::popcount(~(((w & kLow7) + kLow7) | w | kLow7)));
  }
  for (; i < to; ++i) n += t[i] == '\n';
  return n;
}

int on_match(unsigned id, unsigned long long /*from*/, unsigned long long to, unsigned /*flags*/,
             void* context) {
  static_cast<std::vector<std::pair<unsigned, uint64_t>>*>(context)->emplace_back(id, to);
  return 0;
}

struct Pending {
  size_t offset;
  Span span;
  SiteKind kind;
};

}  // namespace

std::string_view to_string(SiteKind kind) {
  switch (kind) {
    case SiteKind::kGlobal:
      return "__global__";
    case SiteKind::kTritonJit:
      return "triton.jit";
    case SiteKind::kTritonInOutputCode:
      return "triton.jit (output code)";
    case SiteKind::kPythonDef:
      return "def";
    case SiteKind::kTemplate:
      return "template";
    case SiteKind::kLaunch:
    case SiteKind::kRegistration:
      return "launch_registration";
  }
  return "";
}

bool is_definition(SiteKind kind) {
  return kind != SiteKind::kLaunch && kind != SiteKind::kRegistration;
}

DefinitionScanner::DefinitionScanner() {
  std::array<const char*, kPatternCount> regexes{};
  std::array<unsigned, kPatternCount> flags{};
  std::array<unsigned, kPatternCount> ids{};
  for (unsigned i = 0; i < kPatternCount; ++i) {
    regexes[i] = kPatterns[i].regex;
    flags[i] = kPatterns[i].flags;
    ids[i] = i;
  }
  hs_compile_error_t* error = nullptr;
  if (hs_compile_multi(regexes.data(), flags.data(), ids.data(), kPatternCount, HS_MODE_BLOCK,
                       nullptr, &db_, &error) != HS_SUCCESS) {
    std::string message = error && error->message ? error->message : "unknown error";
    const int which = error ? error->expression : -1;
    hs_free_compile_error(error);
    throw Error(ErrorKind::kInternal,
                "Hyperscan rejected source pattern " + std::to_string(which) + ": " + message);
  }
}

DefinitionScanner::~DefinitionScanner() { hs_free_database(db_); }

DefinitionScanner::Scratch::Scratch(const DefinitionScanner& scanner) {
  if (hs_alloc_scratch(scanner.db_, &scratch_) != HS_SUCCESS) {
    throw Error(ErrorKind::kInternal, "cannot allocate Hyperscan scratch space");
  }
}

DefinitionScanner::Scratch::~Scratch() { hs_free_scratch(scratch_); }

void DefinitionScanner::scan(std::string_view t, SourceLanguage language, Scratch& scratch,
                             std::vector<Site>& out) const {
  auto& matches = scratch.matches_;
  matches.clear();
  if (hs_scan(db_, t.data(), static_cast<unsigned>(t.size()), 0, scratch.scratch_, on_match,
              &matches) != HS_SUCCESS) {
    throw Error(ErrorKind::kInternal, "Hyperscan scan failed");
  }
  if (matches.empty()) return;
  std::sort(matches.begin(), matches.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });

  const bool python = language == SourceLanguage::kPython;
  std::vector<Pending> pending;
  uint64_t decorator_end = kNone;
  uint64_t previous_def_end = 0;
  for (const auto& [id, end] : matches) {
    if (python !=
        (id == kPatPythonDef || id == kPatTritonDecorator || id == kPatBareJitDecorator)) {
      continue;  // Python patterns only in .py files and C++ ones only outside them
    }
    const auto to = static_cast<size_t>(end);
    Span span;
    SiteKind kind = SiteKind::kGlobal;
    switch (id) {
      case kPatGlobal:
        span = identifier_before(t, to - 1);
        if (span.empty() || is_attribute_like(t.substr(span.begin, span.end - span.begin)) ||
            is_declaration(t, to - 1)) {
          continue;
        }
        break;
      case kPatPythonDef:
        span = identifier_before(t, to - 1);
        kind = decorator_end != kNone && decorator_end > previous_def_end &&
                       end - decorator_end < kMaxDecoratorDistance
                   ? SiteKind::kTritonJit
                   : SiteKind::kPythonDef;
        previous_def_end = end;
        break;
      case kPatTritonDecorator:
      case kPatBareJitDecorator:
        decorator_end = end;
        continue;
      case kPatChevronLaunch:
        span = launched_identifier(t, to - 3);
        kind = SiteKind::kLaunch;
        if (!span.empty() && t.substr(span.begin, span.end - span.begin) == "operator") continue;
        break;
      case kPatHipLaunch:
        span = identifier_before(t, to - 1);
        kind = SiteKind::kLaunch;
        break;
      case kPatTorchRegistration:
        span = registered_identifier(t, to - 1);
        kind = SiteKind::kRegistration;
        break;
      case kPatRegisterDispatch:
        span = identifier_before(t, to - 1);
        kind = SiteKind::kRegistration;
        break;
      case kPatTemplateClass:
        if (to > 8 && is_ident_char(t[to - 9])) continue;  // "my_template"
        span = template_class_name(t, to);
        kind = SiteKind::kTemplate;
        break;
      default:
        continue;
    }
    if (!span.empty()) pending.push_back({span.begin, span, kind});
  }

  std::sort(pending.begin(), pending.end(),
            [](const Pending& a, const Pending& b) { return a.offset < b.offset; });
  // Line numbers only for what matched: count newlines up to each site once.
  uint32_t line = 1;
  size_t counted_to = 0;
  for (const Pending& p : pending) {
    line += static_cast<uint32_t>(count_newlines(t, counted_to, p.offset));
    counted_to = p.offset;
    out.push_back({std::string(t.substr(p.span.begin, p.span.end - p.span.begin)), line, p.kind});
  }
}

const DefinitionScanner& definition_scanner() {
  static const DefinitionScanner scanner;
  return scanner;
}

}  // namespace magpie::sources::detail
