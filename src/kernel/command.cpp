#include "kernel/command.hpp"

#include "core/child_process.hpp"

#include <cctype>
#include <cstdlib>

namespace magpie::kernel {

VarLookup environment_lookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {
bool is_name_char(char c, bool first) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}
}  // namespace

std::string expand_vars(std::string_view text, const VarLookup& lookup) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    if (text[i + 1] == '{') {
      size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos) {
        out += text.substr(i);
        break;
      }
      std::string name(text.substr(i + 2, close - i - 2));
      auto value = lookup(name);
      out += value ? *value : std::string(text.substr(i, close - i + 1));
      i = close + 1;
      continue;
    }
    size_t j = i + 1;
    while (j < text.size() && is_name_char(text[j], j == i + 1)) ++j;
    if (j == i + 1) {
      out += text[i++];
      continue;
    }
    std::string name(text.substr(i + 1, j - i - 1));
    auto value = lookup(name);
    out += value ? *value : std::string(text.substr(i, j - i));
    i = j;
  }
  return out;
}

Command split_command(std::string_view text) {
  Command argv;
  std::string cur;
  bool in_token = false;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_token = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_token) argv.push_back(std::move(cur));
      cur.clear();
      in_token = false;
    } else {
      cur += c;
      in_token = true;
    }
  }
  if (in_token) argv.push_back(std::move(cur));
  return argv;
}

std::string join_command(const Command& argv) { return shell_join(argv); }

}  // namespace magpie::kernel
