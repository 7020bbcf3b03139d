#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "kernel/process_runner.hpp"

namespace magpie::kernel {
namespace {

namespace fs = std::filesystem;
using magpie::ChildSpec;

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("magpie_proc_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(ProcessRunner, ExitStatusEnvCwdAndLog) {
  auto d = temp_dir("basic");
  ProcessSpec s{{"sh", "-c", "echo $MAGPIE_T; pwd; exit 3"},
                d,
                {{"MAGPIE_T", "hello"}},
                std::chrono::seconds(10),
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
  ProcessSpec s{{"sh", "-c", "sleep 30 & echo $! > child.pid; wait"},
                d,
                {},
                std::chrono::milliseconds(300),
                d / "log"};
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
  for (int i = 0; i < 100 && alive(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
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

// The runner lives in core (core/child_process.hpp) and serves the engine
// launcher too: these cover what kernel evaluation does not use.

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string p, comm, state;
  return static_cast<bool>(stat >> p >> comm >> state) && state != "Z" && state != "X";
}

TEST(ProcessRunner, CapturesOutputWithOrWithoutALog) {
  auto d = temp_dir("capture");
  ProcessSpec s{{"sh", "-c", "echo out; echo err >&2"}, d, {}, std::chrono::seconds(10)};
  s.capture_output = true;
  auto r = run_process(s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output, "out\nerr\n");
  // With a log: the captured text is this run's output, not the log's header or earlier runs.
  s.log_path = d / "log";
  std::ofstream(d / "log") << "earlier run\n";
  r = run_process(s);
  EXPECT_EQ(r.output, "out\nerr\n");
  EXPECT_NE(log_tail(d / "log").find("earlier run\n$ sh -c"), std::string::npos);
}

TEST(ProcessRunner, CancelFlagKillsTheGroup) {
  auto d = temp_dir("cancel");
  std::atomic<bool> cancel{false};
  ProcessSpec s{{"sh", "-c", "sleep 30"}, d, {}, std::chrono::seconds(60), d / "log", &cancel};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  auto r = run_process(s);
  t.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.describe().find("cancelled"), std::string::npos);
}

TEST(ChildProcess, StartFailureReturnsErrno) {
  auto d = temp_dir("child_missing");
  magpie::ChildProcess p;
  ChildSpec spec;
  spec.argv = {"magpie-no-such-command-xyz"};
  spec.log_path = d / "log";
  EXPECT_EQ(p.start(spec), ENOENT);
  EXPECT_TRUE(p.exited());
  EXPECT_EQ(p.exit_status(), "exit 127");
}

TEST(ChildProcess, TerminateGroupReachesGrandchildren) {
  auto d = temp_dir("child_group");
  magpie::ChildProcess p;
  ChildSpec spec;
  // A server that forks a worker and ignores nothing: SIGTERM to the group ends both.
  spec.argv = {"sh", "-c", "sleep 30 & echo $! > worker.pid; wait"};
  spec.cwd = d;
  spec.log_path = d / "log";
  ASSERT_EQ(p.start(spec), 0);
  pid_t worker = 0;
  for (int i = 0; i < 500 && worker <= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream(d / "worker.pid") >> worker;
  }
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(p.running());
  p.terminate_group(std::chrono::seconds(5));
  EXPECT_FALSE(p.running());
  EXPECT_NE(p.exit_status().find("signal"), std::string::npos) << p.exit_status();
  for (int i = 0; i < 100 && alive(worker); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive(worker)) << "worker " << worker << " survived terminate_group";
}

TEST(ChildProcess, ParentDeathSignalEndsTheChildWhenItsThreadEnds) {
  // Linux delivers PR_SET_PDEATHSIG when the thread that forked exits: the
  // stand-in for magpie being killed while an engine runs.
  auto d = temp_dir("child_pdeath");
  auto p = std::make_unique<magpie::ChildProcess>();
  std::thread starter([&] {
    ChildSpec spec;
    spec.argv = {"sleep", "30"};
    spec.log_path = d / "log";
    spec.parent_death_signal = true;
    ASSERT_EQ(p->start(spec), 0);
  });
  starter.join();
  for (int i = 0; i < 500 && p->running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(p->running()) << "the child outlived the thread that started it";
  EXPECT_EQ(p->exit_status(), "killed by signal " + std::to_string(SIGTERM));
}

}  // namespace
}  // namespace magpie::kernel
