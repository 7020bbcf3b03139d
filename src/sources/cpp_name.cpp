#include "sources/detail/cpp_name.hpp"

#include <array>
#include <cctype>
#include <optional>
#include <vector>

namespace magpie::sources::detail {
namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A depth-0 piece of a signature: plain text, or a whole bracketed group.
struct Piece {
  char open = 0;  // 0 for text, else one of "<([{"
  std::string_view text;
};

char closer_for(char open) {
  switch (open) {
    case '<':
      return '>';
    case '(':
      return ')';
    case '[':
      return ']';
    default:
      return '}';
  }
}

// Length of an operator name starting at s[i] ("operator()", "operator<<"),
// 0 when s[i] does not start one. Operators would otherwise unbalance '<'.
size_t operator_length(std::string_view s, size_t i) {
  static constexpr std::string_view kOperator = "operator";
  if (s.substr(i, kOperator.size()) != kOperator) return 0;
  if (i > 0 && is_ident_char(s[i - 1])) return 0;
  size_t j = i + kOperator.size();
  if (j < s.size() && is_ident_char(s[j])) return 0;
  if (s.substr(j, 2) == "()" || s.substr(j, 2) == "[]") return j + 2 - i;
  static constexpr std::string_view kSymbols = "<>=!+-*/%^&|~,";
  while (j < s.size() && kSymbols.find(s[j]) != std::string_view::npos) ++j;
  return j - i;
}

// Splits at depth 0; std::nullopt when brackets do not balance.
std::optional<std::vector<Piece>> split_top_level(std::string_view s) {
  std::vector<Piece> pieces;
  std::vector<char> stack;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (size_t op = operator_length(s, i)) {
      i += op - 1;
      continue;
    }
    const char c = s[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') {
      if (stack.empty()) {
        if (i > start) pieces.push_back({0, s.substr(start, i - start)});
        start = i;
      }
      stack.push_back(c);
    } else if (c == '>' || c == ')' || c == ']' || c == '}') {
      if (c == '>' && i > 0 && s[i - 1] == '-') continue;  // "->"
      if (stack.empty() || closer_for(stack.back()) != c) return std::nullopt;
      stack.pop_back();
      if (stack.empty()) {
        pieces.push_back({s[start], s.substr(start, i + 1 - start)});
        start = i + 1;
      }
    }
  }
  if (!stack.empty()) return std::nullopt;
  if (start < s.size()) pieces.push_back({0, s.substr(start)});
  return pieces;
}

// Text after a parameter list that still belongs to the signature.
bool is_trailing_qualifier(const Piece& p) {
  if (p.open == '[') return true;  // "[clone .cold.1]", "[abi:cxx11]"
  if (p.open != 0) return false;
  std::string_view rest = trim(p.text);
  while (!rest.empty()) {
    size_t end = 0;
    while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end]))) ++end;
    std::string_view word = rest.substr(0, end);
    if (word != "const" && word != "volatile" && word != "noexcept" && word != "&" &&
        word != "&&") {
      return false;
    }
    rest = trim(rest.substr(end));
  }
  return true;
}

struct NameAndArgs {
  std::string qualified;
  std::string_view template_args;  // contents of the name's own <...>, may be empty
};

std::optional<NameAndArgs> name_and_args(std::string_view s) {
  auto pieces = split_top_level(trim(s));
  if (!pieces || pieces->empty()) return std::nullopt;
  size_t end = pieces->size();
  // The parameter list is the last "(...)" followed only by qualifiers.
  for (size_t i = pieces->size(); i-- > 0;) {
    if ((*pieces)[i].open == '(') {
      bool tail_ok = true;
      for (size_t j = i + 1; j < pieces->size(); ++j)
        tail_ok &= is_trailing_qualifier((*pieces)[j]);
      if (tail_ok) end = i;
      break;
    }
  }
  NameAndArgs out;
  if (end > 0 && (*pieces)[end - 1].open == '<') {
    std::string_view group = (*pieces)[end - 1].text;
    out.template_args = group.substr(1, group.size() - 2);
    --end;
  }
  // The return type ends at the last space of depth-0 text.
  size_t begin = 0;
  size_t skip_chars = 0;
  for (size_t i = 0; i < end; ++i) {
    const Piece& p = (*pieces)[i];
    if (p.open != 0) continue;
    std::string_view t = p.text;
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    size_t space = t.rfind(' ');
    if (space != std::string_view::npos) {
      begin = i;
      skip_chars = space + 1;
    }
  }
  for (size_t i = begin; i < end; ++i) {
    const Piece& p = (*pieces)[i];
    std::string_view t = i == begin ? p.text.substr(std::min(skip_chars, p.text.size())) : p.text;
    if (p.open == 0 || p.open == '{') {
      out.qualified += t;
    } else if (p.open == '(') {
      out.qualified += "()";  // a function in the qualifier chain of a lambda
    }                         // '<' groups of enclosing class templates and '[' tags are dropped
  }
  std::string_view q = trim(out.qualified);
  while (q.starts_with("::")) q.remove_prefix(2);
  out.qualified = std::string(q);
  if (out.qualified.empty()) return std::nullopt;
  return out;
}

std::vector<std::string_view> split_template_args(std::string_view args) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (size_t op = operator_length(args, i)) {
      i += op - 1;
      continue;
    }
    const char c = args[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if ((c == '>' && !(i > 0 && args[i - 1] == '-')) || c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(args.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(args.substr(start)));
  return out;
}

std::string_view last_component(std::string_view q) {
  size_t pos = q.rfind("::");
  return pos == std::string_view::npos ? q : q.substr(pos + 2);
}

// Kernels that are one generic entry point instantiated with the real kernel
// as a type argument; the argument, not the entry point, says what runs.
bool is_wrapper(std::string_view qualified) {
  static constexpr std::array<std::string_view, 5> kWrappers = {
      "cutlass::Kernel", "cutlass::Kernel2", "cutlass::device_kernel", "ck_tile::kentry",
      "ck::kernel"};
  for (auto w : kWrappers) {
    if (qualified == w) return true;
  }
  return last_component(qualified).starts_with("enable_sm");  // flash::enable_sm90_or_later
}

// First template argument that names a type, unwrapped recursively.
std::optional<std::string> wrapped_type(std::string_view template_args, int depth = 0) {
  if (depth > 4) return std::nullopt;
  for (std::string_view arg : split_template_args(template_args)) {
    if (arg.empty() || !(std::isalpha(static_cast<unsigned char>(arg[0])) || arg[0] == '_'))
      continue;
    if (arg == "true" || arg == "false") continue;
    auto inner = name_and_args(arg);
    if (!inner) return std::nullopt;
    if (is_wrapper(inner->qualified)) {
      if (auto deeper = wrapped_type(inner->template_args, depth + 1)) return deeper;
    }
    return inner->qualified;
  }
  return std::nullopt;
}

bool is_versioned_namespace(std::string_view ident) {
  if (!ident.ends_with("_NS") || ident.size() < 5) return false;
  bool has_digit = false;
  for (char c : ident) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    has_digit |= std::isdigit(static_cast<unsigned char>(c)) != 0;
  }
  return has_digit;
}

}  // namespace

std::string strip_noise_namespaces(std::string_view name) {
  static constexpr std::array<std::string_view, 2> kAnonymous = {"(anonymous namespace)::",
                                                                 "{anonymous}::"};
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    bool skipped = false;
    for (auto a : kAnonymous) {
      if (name.substr(i, a.size()) == a) {
        i += a.size();
        skipped = true;
        break;
      }
    }
    if (skipped) continue;
    if (is_ident_char(name[i]) && (i == 0 || !is_ident_char(name[i - 1]))) {
      size_t j = i;
      while (j < name.size() && is_ident_char(name[j])) ++j;
      if (name.substr(j, 2) == "::" && is_versioned_namespace(name.substr(i, j - i))) {
        i = j + 2;
        continue;
      }
      out.append(name.substr(i, j - i));
      i = j;
      continue;
    }
    out.push_back(name[i++]);
  }
  return out;
}

CppName parse_cpp_name(std::string_view demangled) {
  const std::string clean = strip_noise_namespaces(demangled);
  auto parsed = name_and_args(clean);
  if (!parsed) {
    std::string whole(trim(clean));
    return {whole, std::string(last_component(whole))};
  }
  CppName out;
  out.qualified = parsed->qualified;
  out.symbol = std::string(last_component(parsed->qualified));
  if (is_wrapper(parsed->qualified)) {
    if (auto inner = wrapped_type(parsed->template_args)) {
      out.qualified += "<" + *inner + ">";
      out.symbol = std::string(last_component(*inner));
    }
  }
  return out;
}

}  // namespace magpie::sources::detail
