// gpu_selection: the choice from a driver's GPU list, and the errors that
// name what exists when a request cannot be met. (What the driver lists is
// read by src/gpu and tested there.)
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "serve/engine_precision.hpp"
#include "serve/gpu_lock.hpp"
#include "serve/gpu_selection.hpp"

namespace magpie::serve {
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

TEST(EnginePrecision, EachEngineGetsItsFlagsOrAReason) {
  EXPECT_EQ(precision_args(Framework::kVllm, "fp8", {}).args,
            (std::vector<std::string>{"--quantization", "fp8"}));
  EXPECT_EQ(precision_args(Framework::kVllm, "bf16", {}).args,
            (std::vector<std::string>{"--dtype", "bfloat16"}));
  EXPECT_EQ(precision_args(Framework::kSglang, "fp16", {}).args,
            (std::vector<std::string>{"--dtype", "float16"}));
  auto fp4 = precision_args(Framework::kVllm, "fp4", {});
  EXPECT_TRUE(fp4.args.empty());
  EXPECT_NE(fp4.warning.find("pre-quantized"), std::string::npos);
  auto atom = precision_args(Framework::kAtom, "bf16", {});
  EXPECT_TRUE(atom.args.empty());
  EXPECT_NE(atom.warning.find("not applied"), std::string::npos);
  // The user's own flag wins.
  auto given = precision_args(Framework::kVllm, "bf16", {"--max-num-seqs", "8", "--dtype=float32"});
  EXPECT_TRUE(given.args.empty());
  EXPECT_NE(given.warning.find("already set --dtype"), std::string::npos);
  EXPECT_THROW(precision_args(Framework::kVllm, "int3", {}), Error);
}

}  // namespace
}  // namespace magpie::serve

namespace magpie::serve {
namespace {

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

}  // namespace
}  // namespace magpie::serve
