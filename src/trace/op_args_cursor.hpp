#pragma once
// A cursor over the small JSON arrays Kineto writes into op arguments ("Input
// Dims", "Input type", "Concrete Inputs"): the ingest parses them with it once
// (trace/op_args.hpp), and the perf models read single entries with it.
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::trace::detail {

class ArgCursor {
 public:
  explicit ArgCursor(std::string_view s) : s_(s) {}
  void skip_ws() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  bool eat(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  bool eat_word(std::string_view w) {
    skip_ws();
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  std::optional<int64_t> integer() {
    skip_ws();
    bool neg = false;
    if (peek() == '-') {
      neg = true;
      ++i_;
    }
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return std::nullopt;
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const int digit = s_[i_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return std::nullopt;
      v = v * 10 + digit;
      ++i_;
    }
    return neg ? -v : v;
  }
  // A JSON string; handles the escapes Kineto can emit.
  std::optional<std::string> string() {
    skip_ws();
    if (peek() != '"') return std::nullopt;
    ++i_;
    std::string out;
    while (!at_end()) {
      char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_end()) return std::nullopt;
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return std::nullopt;
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[i_++])));
            cp <<= 4;
            if (h >= '0' && h <= '9') {
              cp |= static_cast<unsigned>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
              cp |= static_cast<unsigned>(h - 'a' + 10);
            } else {
              return std::nullopt;
            }
          }
          append_utf8(out, cp);
          break;
        }
        default:
          out.push_back(e);
          break;  // \" \\ \/
      }
    }
    return std::nullopt;
  }
  // Skips a list nested up to `depth` levels (TensorList dims).
  bool skip_list(int depth) {
    if (depth <= 0 || !eat('[')) return false;
    if (eat(']')) return true;
    do {
      skip_ws();
      if (peek() == '[') {
        if (!skip_list(depth - 1)) return false;
      } else if (!integer()) {
        return false;
      }
    } while (eat(','));
    return eat(']');
  }
  // A flat list of integers; `[` already consumed.
  std::optional<std::vector<int64_t>> int_list_rest() {
    std::vector<int64_t> out;
    if (eat(']')) return out;
    do {
      auto v = integer();
      if (!v) return std::nullopt;
      out.push_back(*v);
    } while (eat(','));
    if (!eat(']')) return std::nullopt;
    return out;
  }

 private:
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace magpie::trace::detail
