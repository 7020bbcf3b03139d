#include "kernel/kernel_source_scan.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

namespace magpie::kernel {

namespace {

bool ident_start(char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); }
bool ident_char(char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); }
void blank(std::string& s, size_t from, size_t to) {
  for (size_t i = from; i < to && i < s.size(); ++i) {
    if (s[i] != '\n') s[i] = ' ';
  }
}

// Line starts, for offset → 1-based line.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }
  int line_of(size_t offset) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    return static_cast<int>(it - starts_.begin());
  }

 private:
  std::vector<size_t> starts_;
};

// A `'` inside a number is a C++14 digit separator (1'000'000), not a char literal.
bool is_digit_separator(std::string_view t, size_t quote) {
  if (quote == 0 || !std::isxdigit(static_cast<unsigned char>(t[quote - 1]))) return false;
  size_t b = quote;
  while (b > 0 && (ident_char(t[b - 1]) || t[b - 1] == '\'' || t[b - 1] == '.')) --b;
  return std::isdigit(static_cast<unsigned char>(t[b]));
}

// Raw string `R"delim(...)delim"` with an optional L, u, U or u8 prefix.
bool is_raw_string_start(std::string_view t, size_t quote) {
  if (quote == 0 || t[quote - 1] != 'R') return false;
  size_t p = quote - 1;  // the R
  size_t b = p;
  while (b > 0 && ident_char(t[b - 1])) --b;
  std::string_view prefix = t.substr(b, p - b);
  return prefix.empty() || prefix == "L" || prefix == "u" || prefix == "U" || prefix == "u8";
}

// ---- C family -------------------------------------------------------------

struct Token {
  std::string_view text;
  size_t offset = 0;
  bool ident = false;
};

std::vector<Token> tokenize_c(std::string_view t) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (ident_start(c)) {
      size_t j = i + 1;
      while (j < t.size() && ident_char(t[j])) ++j;
      out.push_back({t.substr(i, j - i), i, true});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i + 1;
      while (j < t.size() && (ident_char(t[j]) || t[j] == '.' || t[j] == '\'')) ++j;
      out.push_back({t.substr(i, j - i), i, false});
      i = j;
    } else if (i + 1 < t.size() &&
               ((c == ':' && t[i + 1] == ':') || (c == '-' && t[i + 1] == '>'))) {
      out.push_back({t.substr(i, 2), i, false});
      i += 2;
    } else {
      out.push_back({t.substr(i, 1), i, false});
      ++i;
    }
  }
  return out;
}

bool is(const std::vector<Token>& toks, size_t i, std::string_view text) {
  return i < toks.size() && toks[i].text == text;
}

// Index after the bracket group opening at `open` (which must hold `o`).
size_t skip_group(const std::vector<Token>& toks, size_t open, char o, char c) {
  int depth = 0;
  for (size_t i = open; i < toks.size(); ++i) {
    if (toks[i].text.size() == 1 && toks[i].text[0] == o) ++depth;
    if (toks[i].text.size() == 1 && toks[i].text[0] == c && --depth == 0) return i + 1;
  }
  return toks.size();
}

// Template arguments `<...>` opening at `open`; nullopt when it runs into a
// statement boundary (then `<` was a comparison).
std::optional<size_t> skip_angles(const std::vector<Token>& toks, size_t open) {
  int depth = 0;
  for (size_t i = open; i < toks.size() && i < open + 400; ++i) {
    const auto& t = toks[i].text;
    if (t == "<") ++depth;
    if (t == ">" && --depth == 0) return i + 1;
    if (t == "(") i = skip_group(toks, i, '(', ')') - 1;
    if (t == ";" || t == "{" || t == "}") return std::nullopt;
  }
  return std::nullopt;
}

// Specifiers written between `__global__` and the name (or after the
// parameters) that take a parenthesised argument.
bool is_attribute(std::string_view id) {
  static const std::set<std::string_view> kAttrs{
      "__launch_bounds__", "__attribute__",    "__declspec", "alignas", "__align__",
      "__maxnreg__",       "__cluster_dims__", "noexcept",   "throw",   "__noinline__"};
  return kAttrs.contains(id);
}

// ALL_CAPS: by convention a macro (an attribute after the parameters).
bool is_macro_name(std::string_view id) {
  return std::none_of(id.begin(), id.end(),
                      [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
         std::any_of(id.begin(), id.end(),
                     [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
}

// After the parameter list: a body `{` makes a definition, `;` a declaration;
// anything else means the "name" was a macro written before the real name.
enum class AfterParams { kDefinition, kDeclaration, kNotAName };

AfterParams after_params(const std::vector<Token>& toks, size_t i) {
  for (int guard = 0; i < toks.size() && guard < 200; ++guard) {
    const auto& t = toks[i];
    if (t.text == "{") return AfterParams::kDefinition;
    if (t.text == ";" || t.text == "=" || t.text == ",") return AfterParams::kDeclaration;
    if (t.text == "->") {  // trailing return type: skip to the body or the ';'
      while (i < toks.size() && toks[i].text != "{" && toks[i].text != ";") ++i;
      continue;
    }
    if (t.text == "[" && is(toks, i + 1, "[")) {
      i = skip_group(toks, i, '[', ']');
      continue;
    }
    if (t.ident && is_attribute(t.text)) {
      i = is(toks, i + 1, "(") ? skip_group(toks, i + 1, '(', ')') : i + 1;
      continue;
    }
    if (t.ident && (t.text == "const" || is_macro_name(t.text))) {  // `) MY_NOINLINE {`
      i = is(toks, i + 1, "(") ? skip_group(toks, i + 1, '(', ')') : i + 1;
      continue;
    }
    return AfterParams::kNotAName;
  }
  return AfterParams::kNotAName;
}

std::string qualified_name(const std::vector<Token>& toks, size_t i) {
  std::string name(toks[i].text);
  while (i >= 2 && toks[i - 1].text == "::" && toks[i - 2].ident) {
    name = std::string(toks[i - 2].text) + "::" + name;
    i -= 2;
  }
  return name;
}

// Walks the declaration that starts after a `__global__` token; returns the
// name token's index when it is a definition.
std::optional<size_t> kernel_name_after(const std::vector<Token>& toks, size_t j) {
  for (int guard = 0; j < toks.size() && guard < 300; ++guard) {
    const auto& t = toks[j];
    if (t.text == ";" || t.text == "{" || t.text == "}" || t.text == "=") return std::nullopt;
    if (t.text == "[" && is(toks, j + 1, "[")) {
      j = skip_group(toks, j, '[', ']');
      continue;
    }
    if (!t.ident) {
      ++j;
      continue;
    }
    if (is_attribute(t.text) && is(toks, j + 1, "(")) {
      j = skip_group(toks, j + 1, '(', ')');
      continue;
    }
    size_t k = j + 1;
    if (is(toks, k, "<") && t.text != "template" && t.text != "operator") {
      auto end = skip_angles(toks, k);
      if (!end) return std::nullopt;
      if (!is(toks, *end, "(")) {  // a templated type, e.g. the return type
        j = *end;
        continue;
      }
      k = *end;
    }
    if (is(toks, k, "(")) {
      size_t close = skip_group(toks, k, '(', ')');
      switch (after_params(toks, close)) {
        case AfterParams::kDefinition:
          return j;
        case AfterParams::kDeclaration:
          return std::nullopt;
        case AfterParams::kNotAName:
          j = close;
          continue;
      }
    }
    ++j;
  }
  return std::nullopt;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// `hipMalloc`, `hipLaunchKernelGGL`: a vendor prefix followed by an upper-case letter.
bool vendor_identifier(std::string_view id, std::string_view prefix) {
  return id.size() > prefix.size() && starts_with(id, prefix) &&
         std::isupper(static_cast<unsigned char>(id[prefix.size()]));
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Reads the preprocessor: markers from #include targets, macros standing for
// `__global__`, and `#if 0` regions. Blanks directive lines and dead regions
// in `code` (which has comments and strings blanked already).
void preprocess(std::string_view no_comments, std::string& code, CSourceScan& scan,
                std::set<std::string, std::less<>>& global_macros) {
  std::vector<bool> if_stack;  // per open #if: is this #if 0 (dead) region
  int dead_depth = 0;          // >0 while inside an #if 0 region
  size_t i = 0;
  while (i < no_comments.size()) {
    size_t eol = no_comments.find('\n', i);
    // A directive continues over lines ending in a backslash.
    while (eol != std::string_view::npos && eol > i && no_comments[eol - 1] == '\\') {
      eol = no_comments.find('\n', eol + 1);
    }
    size_t end = eol == std::string_view::npos ? no_comments.size() : eol;
    std::string line = trim(no_comments.substr(i, end - i));
    bool directive = !line.empty() && line[0] == '#';
    if (directive) {
      std::string body = trim(std::string_view(line).substr(1));
      size_t kw_end = 0;
      while (kw_end < body.size() && ident_char(body[kw_end])) ++kw_end;
      std::string kw = body.substr(0, kw_end);
      std::string rest = trim(std::string_view(body).substr(kw_end));
      if (kw == "if" || kw == "ifdef" || kw == "ifndef") {
        bool zero = kw == "if" && (rest == "0" || rest == "false");
        if_stack.push_back(zero);
        if (zero || dead_depth > 0) ++dead_depth;
      } else if ((kw == "else" || kw == "elif") && !if_stack.empty()) {
        if (if_stack.back() && dead_depth == 1) {  // the live branch of `#if 0`
          if_stack.back() = false;
          dead_depth = 0;
        }
      } else if (kw == "endif" && !if_stack.empty()) {
        if (dead_depth > 0) --dead_depth;
        if_stack.pop_back();
      } else if (dead_depth == 0 && kw == "include") {
        std::string target = rest.size() > 2 ? rest.substr(1, rest.size() - 2) : rest;
        if (starts_with(target, "hip/") || target.find("hip_runtime") != std::string::npos) {
          scan.hip_markers = true;
        }
        if (starts_with(target, "cuda") || target.find("cuda_runtime") != std::string::npos) {
          scan.cuda_markers = true;
        }
      } else if (dead_depth == 0 && kw == "define") {
        size_t n = 0;
        while (n < rest.size() && ident_char(rest[n])) ++n;
        bool object_like = n > 0 && (n == rest.size() || rest[n] != '(');
        if (object_like) {
          for (const auto& tok : tokenize_c(std::string_view(rest).substr(n))) {
            if (tok.ident && (tok.text == "__global__" || global_macros.contains(tok.text))) {
              global_macros.insert(rest.substr(0, n));
              break;
            }
          }
        }
      }
    }
    if (directive || dead_depth > 0) blank(code, i, end);
    if (eol == std::string_view::npos) break;
    i = eol + 1;
  }
}

// ---- Python ---------------------------------------------------------------

struct LogicalLine {
  std::string text;  // joined physical lines, leading indentation removed
  size_t offset = 0;
};

std::vector<LogicalLine> logical_lines(std::string_view t) {
  std::vector<LogicalLine> out;
  int depth = 0;
  size_t start = 0;
  auto flush = [&](size_t end) {
    size_t b = start;
    while (b < end && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
    if (b < end) out.push_back({trim(t.substr(b, end - b)), b});
    start = end + 1;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (c == '\n' && depth == 0 && !(i > 0 && t[i - 1] == '\\')) flush(i);
  }
  if (start < t.size()) flush(t.size());
  return out;
}

// `a.b . c` → "a.b.c" read from the start of `s`.
std::string dotted_name(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i >= s.size() || !ident_start(s[i])) break;
    size_t j = i;
    while (j < s.size() && ident_char(s[j])) ++j;
    out.append(s.substr(i, j - i));
    i = j;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i < s.size() && s[i] == '.') {
      out += '.';
      ++i;
    } else {
      break;
    }
  }
  return out;
}

std::vector<std::string> split_top_level(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      auto item = trim(s.substr(start, i - start));
      if (!item.empty()) out.push_back(item);
      start = i + 1;
      continue;
    }
    if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++depth;
    if (s[i] == ')' || s[i] == ']' || s[i] == '}') --depth;
  }
  return out;
}

bool keyword_line(std::string_view line, std::string_view kw) {
  return starts_with(line, kw) && line.size() > kw.size() &&
         std::isspace(static_cast<unsigned char>(line[kw.size()]));
}

// Names that reach triton.jit and nn.Module in this file.
struct PythonNames {
  std::set<std::string, std::less<>> jit{"triton.jit"};
  std::set<std::string, std::less<>> module_bases{"nn.Module", "torch.nn.Module"};
};

void read_import(std::string_view line, PythonNames& names) {
  auto item_alias = [](const std::string& item) -> std::pair<std::string, std::string> {
    auto as = item.find(" as ");
    if (as == std::string::npos) return {dotted_name(item), ""};
    return {dotted_name(item.substr(0, as)), trim(std::string_view(item).substr(as + 4))};
  };
  if (keyword_line(line, "import")) {
    for (const auto& item : split_top_level(line.substr(6))) {
      auto [mod, alias] = item_alias(item);
      if (alias.empty()) continue;  // `import triton` / `import torch.nn`: the defaults cover them
      if (mod == "triton") names.jit.insert(alias + ".jit");
      if (mod == "torch") names.module_bases.insert(alias + ".nn.Module");
      if (mod == "torch.nn") names.module_bases.insert(alias + ".Module");
    }
    return;
  }
  if (!keyword_line(line, "from")) return;
  auto imp = line.find(" import ");
  if (imp == std::string_view::npos) return;
  std::string mod = dotted_name(line.substr(4, imp - 4));
  std::string list = trim(line.substr(imp + 8));
  if (!list.empty() && list.front() == '(')
    list = list.substr(1, list.size() - (list.back() == ')' ? 2 : 1));
  for (const auto& item : split_top_level(list)) {
    auto [what, alias] = item_alias(item);
    std::string local = alias.empty() ? what : alias;
    if (starts_with(mod, "triton") && what == "jit") names.jit.insert(local);
    if (mod == "torch" && what == "nn") names.module_bases.insert(local + ".Module");
    if (mod == "torch.nn" && what == "Module") names.module_bases.insert(local);
  }
}

// Base classes of `class Name(bases):` without keywords and subscripts.
std::vector<std::string> class_bases(std::string_view line) {
  std::vector<std::string> out;
  auto open = line.find('(');
  if (open == std::string_view::npos) return out;
  int depth = 0;
  size_t close = open;
  for (; close < line.size(); ++close) {
    if (line[close] == '(') ++depth;
    if (line[close] == ')' && --depth == 0) break;
  }
  for (const auto& item : split_top_level(line.substr(open + 1, close - open - 1))) {
    if (item.find('=') != std::string::npos) continue;  // metaclass=..., keywords
    out.push_back(dotted_name(item));
  }
  return out;
}

}  // namespace

std::string blank_c_comments(std::string_view text, bool blank_strings_too) {
  std::string out(text);
  const std::string_view t = text;
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      size_t j = i;
      while (j < t.size() && !(t[j] == '\n' && t[j - 1] != '\\')) ++j;  // `\` continues it
      blank(out, i, j);
      i = j;
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      size_t end = t.find("*/", i + 2);
      size_t j = end == std::string_view::npos ? t.size() : end + 2;
      blank(out, i, j);
      i = j;
    } else if (c == '"' && is_raw_string_start(t, i)) {
      size_t paren = t.find('(', i + 1);
      std::string close =
          ")" + std::string(t.substr(i + 1, paren == std::string_view::npos ? 0 : paren - i - 1)) +
          "\"";
      size_t end = paren == std::string_view::npos ? std::string_view::npos : t.find(close, paren);
      size_t j = end == std::string_view::npos ? t.size() : end + close.size();
      if (blank_strings_too) blank(out, i, j);
      i = j;
    } else if ((c == '"' || c == '\'') && !(c == '\'' && is_digit_separator(t, i))) {
      size_t j = i + 1;
      while (j < t.size() && t[j] != c && t[j] != '\n') j += (t[j] == '\\') ? 2 : 1;
      j = std::min(j + 1, t.size());
      if (blank_strings_too) blank(out, i, j);
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

std::string blank_python_comments_and_strings(std::string_view text) {
  std::string out(text);
  const std::string_view t = text;
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == '#') {
      size_t j = t.find('\n', i);
      if (j == std::string_view::npos) j = t.size();
      blank(out, i, j);
      i = j;
    } else if (c == '"' || c == '\'') {
      bool triple = i + 2 < t.size() && t[i + 1] == c && t[i + 2] == c;
      size_t j = i + (triple ? 3 : 1);
      while (j < t.size()) {
        if (t[j] == '\\') {
          j += 2;
        } else if (triple && t.compare(j, 3, std::string(3, c)) == 0) {
          j += 3;
          break;
        } else if (!triple && (t[j] == c || t[j] == '\n')) {
          ++j;
          break;
        } else {
          ++j;
        }
      }
      j = std::min(j, t.size());
      blank(out, i, j);
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

CSourceScan scan_c_source(std::string_view text) {
  CSourceScan scan;
  const std::string no_comments = blank_c_comments(text, false);
  std::string code = blank_c_comments(text, true);
  std::set<std::string, std::less<>> global_macros;
  preprocess(no_comments, code, scan, global_macros);

  const LineIndex lines(text);
  const auto toks = tokenize_c(code);
  // Enclosing namespaces, so a kernel is named as profilers name it (ops::kern).
  struct Namespace {
    std::string name;  // "" for an anonymous namespace
    int depth;         // brace depth inside it
  };
  std::vector<Namespace> namespaces;
  int depth = 0;
  for (size_t i = 0; i < toks.size(); ++i) {
    const auto& t = toks[i];
    if (t.text == "{") ++depth;
    if (t.text == "}") {
      --depth;
      while (!namespaces.empty() && namespaces.back().depth > depth) namespaces.pop_back();
    }
    if (t.text == "namespace") {
      std::string name;
      size_t j = i + 1;
      for (; j < toks.size() && (toks[j].ident || toks[j].text == "::"); ++j) {
        if (toks[j].text != "inline") name += toks[j].text;
      }
      if (is(toks, j, "{")) namespaces.push_back({name, depth + 1});
      continue;
    }
    if (!t.ident) continue;
    if (vendor_identifier(t.text, "hip")) scan.hip_markers = true;
    if (vendor_identifier(t.text, "cuda")) scan.cuda_markers = true;
    if (t.text != "__global__" && !global_macros.contains(t.text)) continue;
    if (auto name = kernel_name_after(toks, i + 1)) {
      std::string qualified;
      for (const auto& ns : namespaces) {
        if (!ns.name.empty()) qualified += ns.name + "::";
      }
      scan.kernels.push_back(
          {lines.line_of(toks[*name].offset), qualified + qualified_name(toks, *name)});
    }
  }
  return scan;
}

PythonSourceScan scan_python_source(std::string_view text) {
  PythonSourceScan scan;
  const std::string code = blank_python_comments_and_strings(text);
  const LineIndex lines(code);
  const auto logical = logical_lines(code);

  PythonNames names;
  for (const auto& l : logical) read_import(l.text, names);

  struct ClassDef {
    std::string name;
    int line;
    std::vector<std::string> bases;
  };
  std::vector<ClassDef> classes;
  std::vector<std::string> decorators;
  for (const auto& l : logical) {
    std::string_view s = l.text;
    if (!s.empty() && s[0] == '@') {
      decorators.push_back(dotted_name(s.substr(1)));
      continue;
    }
    const std::string def = keyword_line(s, "async") ? trim(s.substr(5)) : std::string(s);
    if (keyword_line(def, "def")) {
      bool jit = std::any_of(decorators.begin(), decorators.end(),
                             [&](const std::string& d) { return names.jit.contains(d); });
      std::string name = dotted_name(def.substr(3));
      if (jit && !name.empty()) scan.triton.push_back({lines.line_of(l.offset), name});
    } else if (keyword_line(s, "class")) {
      std::string rest(s.substr(5));
      classes.push_back({dotted_name(rest), lines.line_of(l.offset), class_bases(rest)});
    }
    decorators.clear();
  }

  // Subclasses of subclasses within the file count too (a fixpoint over the bases).
  std::set<std::string, std::less<>> module_classes;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& c : classes) {
      if (module_classes.contains(c.name)) continue;
      for (const auto& b : c.bases) {
        if (names.module_bases.contains(b) || module_classes.contains(b)) {
          module_classes.insert(c.name);
          grew = true;
          break;
        }
      }
    }
  }
  for (const auto& c : classes) {
    if (module_classes.contains(c.name)) scan.modules.push_back({c.line, c.name});
  }
  return scan;
}

}  // namespace magpie::kernel
