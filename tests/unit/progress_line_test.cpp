#include "core/progress_line.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace magpie {

TEST(ProgressLine, StyleFollowsTheTerminalAndTheFlag) {
  EXPECT_EQ(progress_style(true, false), ProgressStyle::kTerminal);
  EXPECT_EQ(progress_style(false, true), ProgressStyle::kLines);
  EXPECT_EQ(progress_style(false, false), ProgressStyle::kOff);
}

TEST(ProgressLine, FormatsDurations) {
  EXPECT_EQ(format_duration(7.4), "7s");
  EXPECT_EQ(format_duration(125), "2m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(ProgressLine, LineShowsPercentLimitAndEta) {
  ProgressState st{"case 1/2: 6/24 done", 0.25, 1.0, 12, std::nullopt, 36};
  EXPECT_EQ(format_progress(st), "case 1/2: 6/24 done  [25%]  12s  ETA 36s");
  ProgressState wait{"waiting for the server", 0, std::nullopt, 65, 2700.0, -1};
  EXPECT_EQ(format_progress(wait), "waiting for the server  1m05s of 45m00s limit");
}

TEST(ProgressLine, OffWritesNothingAndLinesWriteEachStepOnce) {
  std::ostringstream off_out, lines_out;
  {
    ProgressLine off(ProgressStyle::kOff, off_out);
    off.update(1, 2, "step a");
  }
  EXPECT_EQ(off_out.str(), "");
  {
    ProgressLine lines(ProgressStyle::kLines, lines_out);
    lines.set_limit("step b", 10, "at http://x");
    lines.update(0, std::nullopt, "step a: 1");
    lines.update(0, std::nullopt, "step a: 2");  // same step within 10 s: not repeated
    lines.update(0, std::nullopt, "step b");
    lines.finish();
  }
  const std::string text = lines_out.str();
  EXPECT_NE(text.find("step a: 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("step a: 2"), std::string::npos) << text;
  EXPECT_NE(text.find("step b at http://x  0s of 10s limit"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(ProgressLine, NewsInTheSameStepIsPrintedAtOnceAfterTheNote) {
  // Waiting for a server: the clock and counters alone wait 10 s between plain
  // lines, but a new last error is news and is printed at once, after the clock.
  std::ostringstream out;
  {
    ProgressLine lines(ProgressStyle::kLines, out);
    lines.set_limit("waiting for the server", 30, "at http://127.0.0.1:9");
    lines.update(0, std::nullopt, "waiting for the server to become ready");
    lines.update(0, std::nullopt, "waiting for the server to become ready: last error: connect: Connection refused");
    lines.update(0, std::nullopt, "waiting for the server to become ready: last error: connect: Connection refused");
    lines.update(0, std::nullopt, "waiting for the server to become ready: last error: /health answered 503");
    lines.finish();
  }
  const std::string text = out.str();
  EXPECT_NE(text.find("waiting for the server to become ready at http://127.0.0.1:9  0s of 30s limit  last error: "
                      "connect: Connection refused\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("of 30s limit  last error: /health answered 503\n"), std::string::npos) << text;
  // The repeated error was not printed twice.
  EXPECT_EQ(text.find("refused"), text.rfind("refused")) << text;
}

}  // namespace magpie
