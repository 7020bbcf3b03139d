// The job runner: at most N long tool calls at once, the rest queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "mcp/job_runner.hpp"

namespace magpie::mcp {
namespace {

TEST(McpJobRunner, RunsAtMostNAtOnce) {
  JobRunner runner(2);
  std::atomic<int> now{0}, peak{0}, done{0};
  for (int i = 0; i < 6; ++i)
    runner.submit([&] {
      int n = ++now;
      int p = peak.load();
      while (n > p && !peak.compare_exchange_weak(p, n)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      --now;
      ++done;
    });
  runner.shutdown();
  EXPECT_EQ(done, 6);
  EXPECT_LE(peak, 2);
}

}  // namespace
}  // namespace magpie::mcp
