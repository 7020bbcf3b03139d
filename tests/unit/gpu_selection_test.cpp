// gpu_selection: the choice from a driver's GPU list, and the errors that
// name what exists when a request cannot be met. (What the driver lists is
// read by gpu/nvml.cpp and tested in gpu_nvml_test.)
// The GPU lists here are made up: CI has no GPU, and a list is what a choice is made from.
#include "gpu/gpu_selection.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "gpu/gpu_lock.hpp"

namespace magpie::gpu {
namespace {

GpuInventory four_gpus() {
  GpuInventory inv;
  inv.vendor = "NVIDIA";
  // GPU 1 is nearly full, GPU 3 the emptiest.
  inv.gpus = {{0, "NVIDIA H200", "", 100, 140},
              {1, "NVIDIA H200", "", 2, 140},
              {2, "NVIDIA H200", "", 120, 140},
              {3, "NVIDIA H200", "", 139, 140}};
  return inv;
}

std::string message_of(const GpuSelectionConfig& c, const GpuInventory& inv, int64_t tp = 1) {
  try {
    select_gpus(c, inv, tp);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(GpuSelection, AutoPicksTheMostFreeMemory) {
  GpuSelectionConfig c;
  c.count = 2;
  auto s = select_gpus(c, four_gpus(), 1);
  EXPECT_EQ(s.indices, (std::vector<int>{3, 2}));
  EXPECT_EQ(s.env_name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(s.env_value, "3,2");
  EXPECT_EQ(s.names.size(), 2u);
  EXPECT_NE(s.reason.find("most free memory"), std::string::npos);
}

TEST(GpuSelection, CountDefaultsToTensorParallelism) {
  GpuSelectionConfig c;
  EXPECT_EQ(select_gpus(c, four_gpus(), 3).indices.size(), 3u);
  EXPECT_EQ(select_gpus(c, four_gpus(), 1).indices, std::vector<int>{3});
}

TEST(GpuSelection, MinFreeMemoryFiltersAndSaysWhatExists) {
  GpuSelectionConfig c;
  c.count = 4;  // GPU 1 has 2 GB free, below the default 8
  auto msg = message_of(c, four_gpus());
  EXPECT_NE(msg.find("gpu_selection"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 of all GPUs qualify"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 (NVIDIA H200, 2.0 of 140.0 GB free)"), std::string::npos) << msg;
  c.min_free_memory_gb = 1;
  EXPECT_EQ(select_gpus(c, four_gpus(), 1).indices.size(), 4u);
}

TEST(GpuSelection, CandidatesRestrictAndKeepOrderWithoutAuto) {
  GpuSelectionConfig c;
  c.auto_select = false;
  c.candidates = {2, 0, 1};
  c.count = 2;
  auto s = select_gpus(c, four_gpus(), 1);
  EXPECT_EQ(s.indices, (std::vector<int>{2, 0}));
  EXPECT_EQ(s.env_value, "2,0");
  c.auto_select = true;  // among the candidates, by free memory
  EXPECT_EQ(select_gpus(c, four_gpus(), 1).indices, (std::vector<int>{2, 0}));
  c.count = 3;  // GPU 1 is too full for auto
  EXPECT_NE(message_of(c, four_gpus()).find("2 of the candidates qualify"), std::string::npos);
}

TEST(GpuSelection, AGpuThatDoesNotExistIsNamed) {
  GpuSelectionConfig c;
  c.candidates = {0, 7};
  auto msg = message_of(c, four_gpus());
  EXPECT_NE(msg.find("candidate GPU 7 does not exist; this machine has 4 GPU(s)"),
            std::string::npos)
      << msg;
  GpuSelectionConfig many;
  many.count = 5;
  many.auto_select = false;
  EXPECT_NE(message_of(many, four_gpus()).find("5 GPU(s) wanted, all GPUs has 4"),
            std::string::npos);
  GpuSelectionConfig zero;
  zero.count = 0;
  EXPECT_NE(message_of(zero, four_gpus()).find("count 0"), std::string::npos);
}

TEST(GpuSelection, NoGpuAtAllIsAnErrorThatPointsAtEndpoint) {
  GpuInventory none;
  none.why_empty = "NVML not found (libnvidia-ml.so.1): no NVIDIA driver";
  auto msg = message_of(GpuSelectionConfig{}, none);
  EXPECT_NE(msg.find("no GPU found (NVML not found"), std::string::npos) << msg;
  try {
    select_gpus(GpuSelectionConfig{}, none, 1);
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("--endpoint"), std::string::npos);
  }
}

TEST(GpuSelection, AmdUsesHipVisibleDevices) {
  auto inv = four_gpus();
  inv.vendor = "AMD";
  EXPECT_EQ(select_gpus(GpuSelectionConfig{}, inv, 1).env_name, "HIP_VISIBLE_DEVICES");
}

TEST(GpuSelection, InventoryNeverThrowsWithoutADriver) {
  GpuInventory inv;
  EXPECT_NO_THROW(inv = query_gpu_inventory());
  EXPECT_TRUE(!inv.gpus.empty() || !inv.why_empty.empty());
}

TEST(GpuSelection, BusyGpusAreNeverChosen) {
  auto inv = four_gpus();
  inv.gpus[3].busy = true;  // the emptiest, but another run holds it
  GpuSelectionConfig c;
  c.count = 2;
  EXPECT_EQ(select_gpus(c, inv, 1).indices, (std::vector<int>{2, 0}));
  c.count = 3;
  auto msg = message_of(c, inv);
  EXPECT_NE(msg.find("not in use by another magpie run (1 are)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 (NVIDIA H200, 139.0 of 140.0 GB free, in use by another magpie run)"),
            std::string::npos)
      << msg;
}

TEST(GpuLocks, ASecondHolderIsRefusedUntilTheFirstLetsGo) {
  auto dir = std::filesystem::temp_directory_path() / "magpie_gpu_lock_test";
  std::filesystem::create_directories(dir);
  GpuLocks first(dir), second(dir);
  EXPECT_TRUE(first.try_lock("GPU-aaaa"));
  // flock is per open file: a second open in this same process is refused, as another run would be.
  EXPECT_FALSE(second.try_lock("GPU-aaaa"));
  EXPECT_TRUE(second.try_lock("GPU-bbbb"));
  EXPECT_EQ(first.held(), 1u);
  first.release_all();
  EXPECT_TRUE(second.try_lock("GPU-aaaa"));
  {
    GpuLocks moved = std::move(second);  // the run's locks travel with it
    EXPECT_EQ(moved.held(), 2u);
    EXPECT_FALSE(first.try_lock("GPU-bbbb"));
  }
  EXPECT_TRUE(first.try_lock("GPU-bbbb"));  // released when the holder went away
  EXPECT_EQ(first.path_for("GPU-a/b").filename(), "magpie-gpu-GPU-a_b.lock");
  std::filesystem::remove_all(dir);
}

TEST(GpuLocks, KeyIsTheUuidElseTheIndex) {
  GpuInventoryEntry g;
  g.index = 3;
  EXPECT_EQ(gpu_lock_key(g), "index3");
  g.uuid = "GPU-1234";
  EXPECT_EQ(gpu_lock_key(g), "GPU-1234");
}

// select_and_lock against the real lock files, with made-up GPU lists (CI has no GPU).
struct LockDir {
  std::filesystem::path path;
  explicit LockDir(const char* name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~LockDir() { std::filesystem::remove_all(path); }
};

GpuInventory two_gpus_with_uuids() {
  GpuInventory inv;
  inv.vendor = "NVIDIA";
  inv.gpus = {{0, "NVIDIA H200", "GPU-aaaa", 130, 140}, {1, "NVIDIA H200", "GPU-bbbb", 120, 140}};
  return inv;
}

TEST(GpuSelectAndLock, ASecondRunGetsTheOtherGpuAndAThirdNone) {
  LockDir dir("magpie_select_and_lock");
  GpuSelectionConfig one;
  one.count = 1;
  auto first = select_and_lock(one, two_gpus_with_uuids, 1, dir.path);
  EXPECT_EQ(first.selection.indices, std::vector<int>{0});  // the most free memory
  EXPECT_EQ(first.selection.uuids, std::vector<std::string>{"GPU-aaaa"});
  EXPECT_NE(first.selection.reason.find("locked in " + dir.path.string()), std::string::npos);
  auto second = select_and_lock(one, two_gpus_with_uuids, 1, dir.path);
  EXPECT_EQ(second.selection.indices, std::vector<int>{1});
  EXPECT_NE(second.selection.reason.find("not in use by another magpie run (1 are)"),
            std::string::npos)
      << second.selection.reason;
  try {
    select_and_lock(one, two_gpus_with_uuids, 1, dir.path);
    ADD_FAILURE() << "a third run got a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another magpie run"), std::string::npos)
        << e.what();
  }
  second.locks.release_all();
  EXPECT_EQ(select_and_lock(one, two_gpus_with_uuids, 1, dir.path).selection.indices,
            std::vector<int>{1});
}

TEST(GpuSelectAndLock, WaitsForAGpuAnotherRunReleases) {
  LockDir dir("magpie_select_and_lock_wait");
  GpuInventory inv;
  inv.vendor = "NVIDIA";
  inv.gpus = {{0, "NVIDIA H200", "GPU-only", 130, 140}};
  auto only = [&inv] { return inv; };
  GpuSelectionConfig c;
  c.count = 1;
  auto holder = select_and_lock(c, only, 1, dir.path);
  // Released from another thread; the wait allowed is far longer than the hold,
  // so the verdict does not depend on how fast this machine is.
  std::thread release([&holder] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    holder.locks.release_all();
  });
  c.wait_s = 120;
  auto waited = select_and_lock(c, only, 1, dir.path);
  release.join();
  EXPECT_EQ(waited.selection.indices, std::vector<int>{0});
  EXPECT_GT(waited.waited_s, 0.0);
}

TEST(GpuSelectAndLock, CancelStopsTheWait) {
  LockDir dir("magpie_select_and_lock_cancel");
  GpuInventory inv;
  inv.vendor = "NVIDIA";
  inv.gpus = {{0, "NVIDIA H200", "GPU-only", 130, 140}};
  auto only = [&inv] { return inv; };
  GpuSelectionConfig c;
  c.count = 1;
  auto holder = select_and_lock(c, only, 1, dir.path);
  c.wait_s = 600;
  std::atomic<bool> cancel{true};
  try {
    select_and_lock(c, only, 1, dir.path, &cancel);
    ADD_FAILURE() << "got a GPU another run holds";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled) << e.what();
  }
}

TEST(GpuSelectAndLock, ARequestThatCannotBeMetDoesNotWait) {
  LockDir dir("magpie_select_and_lock_nowait");
  GpuSelectionConfig c;
  c.count = 3;  // the machine has two: no other run is to blame
  c.wait_s = 600;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(select_and_lock(c, two_gpus_with_uuids, 1, dir.path), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

// Two processes (fork), one GPU: while the child holds it the parent is refused,
// and gets it once the child has exited. Pipes order the steps, not sleeps.
TEST(GpuSelectAndLock, TwoProcessesNeverHoldOneGpu) {
  LockDir dir("magpie_select_and_lock_fork");
  GpuInventory inv;
  inv.vendor = "NVIDIA";
  inv.gpus = {{0, "NVIDIA H200", "GPU-only", 130, 140}};
  auto only = [&inv] { return inv; };
  GpuSelectionConfig c;
  c.count = 1;
  int locked_pipe[2], go_pipe[2];
  ASSERT_EQ(::pipe(locked_pipe), 0);
  ASSERT_EQ(::pipe(go_pipe), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char byte = 'x';
    try {
      auto held = select_and_lock(c, only, 1, dir.path);
      (void)!::write(locked_pipe[1], &byte, 1);
      (void)!::read(go_pipe[0], &byte, 1);  // hold until the parent has tried
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(locked_pipe[0], &byte, 1), 1);
  EXPECT_THROW(select_and_lock(c, only, 1, dir.path), Error);
  (void)!::write(go_pipe[1], &byte, 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(select_and_lock(c, only, 1, dir.path).selection.indices, std::vector<int>{0});
  for (int fd : {locked_pipe[0], locked_pipe[1], go_pipe[0], go_pipe[1]}) ::close(fd);
}

}  // namespace
}  // namespace magpie::gpu
