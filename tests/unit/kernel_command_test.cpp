#include <gtest/gtest.h>

#include "kernel/command.hpp"

namespace magpie::kernel {
namespace {

TEST(KernelCommand, ExpandVarsBothFormsAndKeepsUnknown) {
  auto lookup = [](const std::string& n) -> std::optional<std::string> {
    if (n == "A") return "1";
    if (n == "LONG_NAME") return "x";
    return std::nullopt;
  };
  EXPECT_EQ(expand_vars("$A-${A}-$LONG_NAME/$NOPE ${NOPE} $ 5$", lookup), "1-1-x/$NOPE ${NOPE} $ 5$");
  EXPECT_EQ(expand_vars("${A", lookup), "${A");
}

TEST(KernelCommand, SplitHonoursQuotes) {
  EXPECT_EQ(split_command("  a 'b c'  \"d e\"f  "), (Command{"a", "b c", "d ef"}));
  EXPECT_TRUE(split_command("   ").empty());
  EXPECT_EQ(join_command({"a", "b c", "it's"}), "a 'b c' 'it'\\''s'");
}

}  // namespace
}  // namespace magpie::kernel
