#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kernel/process_runner.hpp"

namespace magpie::kernel {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("magpie_proc_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(ProcessRunner, ExitStatusEnvCwdAndLog) {
  auto d = temp_dir("basic");
  ProcessSpec s{{"sh", "-c", "echo $MAGPIE_T; pwd; exit 3"}, d, {{"MAGPIE_T", "hello"}}, std::chrono::seconds(10),
                d / "log"};
  auto r = run_process(s);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit 3");
  auto log = log_tail(d / "log");
  EXPECT_NE(log.find("hello"), std::string::npos);
  EXPECT_NE(log.find(d.string()), std::string::npos);
  EXPECT_NE(log.find("$ sh -c"), std::string::npos);  // the command heads its output
}

TEST(ProcessRunner, TimeoutKillsTheWholeGroup) {
  auto d = temp_dir("timeout");
  // The background sleep is a grandchild: it must die with the group.
  ProcessSpec s{{"sh", "-c", "sleep 30 & echo $! > child.pid; wait"}, d, {}, std::chrono::milliseconds(300), d / "log"};
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_process(s);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(secs, 5.0);
  EXPECT_NE(r.describe().find("timed out"), std::string::npos);
  pid_t child = 0;
  std::ifstream(d / "child.pid") >> child;
  ASSERT_GT(child, 0);
  // Dead means gone or a zombie waiting for its new parent to reap it.
  auto alive = [child] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    return static_cast<bool>(stat >> pid >> comm >> state) && state != "Z" && state != "X";
  };
  for (int i = 0; i < 100 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive()) << "grandchild " << child << " survived the timeout";
}

TEST(ProcessRunner, MissingCommandAndSignal) {
  auto d = temp_dir("missing");
  auto r = run_process({{"magpie-no-such-command-xyz"}, d, {}, std::chrono::seconds(5), d / "log"});
  EXPECT_TRUE(r.spawn_failed);
  EXPECT_NE(log_tail(d / "log").find("not found"), std::string::npos);
  auto k = run_process({{"sh", "-c", "kill -9 $$"}, d, {}, std::chrono::seconds(5), {}});
  EXPECT_EQ(k.term_signal, SIGKILL);
}

}  // namespace
}  // namespace magpie::kernel
