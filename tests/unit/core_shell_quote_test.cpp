// magpie::shell_join, the one quoting rule for commands in logs and reports
// (issue 33: serve, kernel and ray logs had three, accepting different
// "safe" characters; the core one left backticks, `!`, `~` and `#` bare).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/child_process.hpp"
#include "serve/engine_command.hpp"

namespace magpie {
namespace {

// What /bin/sh makes of the joined text: one line per word it sees.
std::string words_seen_by_sh(const std::string& joined) {
  const std::string cmd = "printf '%s\\n' " + joined;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(("/bin/sh -c " + shell_quote(cmd)).c_str(), "r"), pclose);
  std::string out;
  std::array<char, 256> buf{};
  while (p && fgets(buf.data(), buf.size(), p.get())) out += buf.data();
  return out;
}

TEST(ShellQuote, EveryArgumentPastesBackAsOneWord) {
  const std::vector<std::string> args = {"plain", "a b", "it's", "`echo INJECTED`", "$(echo INJECTED)", "$HOME",
                                         "~", "#comment", "!x", "{a,b}", "x*", "[ab]", "semi;colon", "tab\there",
                                         "back\\slash", "--flag=v:1,2@3%+"};
  std::string want;
  for (const auto& a : args) want += a + "\n";
  EXPECT_EQ(words_seen_by_sh(shell_join(args)), want);
}

TEST(ShellQuote, PlainWordsStayBareAndEmptyIsQuoted) {
  EXPECT_EQ(shell_join({"vllm", "serve", "--port=8000", "a/b.c", "x@y%z+1,2:3"}), "vllm serve --port=8000 a/b.c x@y%z+1,2:3");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("`id`"), "'`id`'");
  EXPECT_EQ(shell_quote("~"), "'~'");
}

TEST(ShellQuote, ServeUsesTheSameRule) {
  // engine_command.hpp re-exports magpie::shell_join: one function, not a copy.
  const std::vector<std::string> args = {"a b", "`x`"};
  EXPECT_EQ(serve::shell_join(args), magpie::shell_join(args));
}

}  // namespace
}  // namespace magpie
