// The rules of docs/TRACELENS.md "Ranks, cycles and kinds of trace", each on
// a real trace (tests/data/trace_rules and tests/data/public_traces; their
// READMEs say where each came from and how it was cut).
#include "trace/rank_discovery.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/gap_analysis.hpp"
#include "analysis/gap_analysis_run.hpp"
#include "core/error.hpp"
#include "core/gzip.hpp"
#include "core/file_io.hpp"
#include "sources/kernel_name.hpp"
#include "trace/merged_trace.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::trace {
namespace {

namespace fs = std::filesystem;

const fs::path kRules = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/trace_rules";
const fs::path kPublic = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/public_traces";
const fs::path kCycles = kRules / "kineto_resnet50_cycles";
const fs::path kCycle0 = kCycles / "worker0.1623143089861.pt.trace.json.gz";
const fs::path kCycle1 = kCycles / "worker0.1623143566756.pt.trace.json.gz";

Trace load(const fs::path& p) { return load_trace(p, IngestOptions{}); }

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The trace's events as written, independent of the ingest under test.
nlohmann::json events_of(const fs::path& p) {
  PaddedBuffer raw = read_file(p);
  std::string text = is_gzip(raw.view()) ? std::string(gunzip(raw.view(), p.string()).view())
                                         : std::string(raw.view());
  return nlohmann::json::parse(text)["traceEvents"];
}

TEST(RankFromFileName, EveryConventionOfTheEngines) {
  EXPECT_EQ(rank_from_file_name("sampled_rank-1.json.gz"), 1);
  EXPECT_EQ(rank_from_file_name("run-rank-12.pt.trace.json.gz"), 12);
  EXPECT_EQ(rank_from_file_name("graph_capture_rank_0.1773709742341309550.pt.trace.json.gz"), 0);
  EXPECT_EQ(rank_from_file_name("worker0.1623143089861.pt.trace.json.gz"), 0);
  EXPECT_EQ(rank_from_file_name("worker_3.json"), 3);
  EXPECT_EQ(rank_from_file_name("1718000000.123-TP-5.trace.json.gz"), 5);
  EXPECT_EQ(rank_from_file_name("host_4242.1623143089861.pt.trace.json.gz"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("trace1.json"), std::nullopt);
}

TEST(WorkerName, DropsOnlyTheProfilersTimestamps) {
  EXPECT_EQ(worker_name("worker0.1623143089861.pt.trace.json.gz"), "worker0.*");
  EXPECT_EQ(worker_name("worker0.1623143566756.pt.trace.json.gz"), "worker0.*");
  EXPECT_EQ(worker_name("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"), "rank-34.*.1074");
  EXPECT_NE(worker_name("trace1.json"), worker_name("trace2.json"));
}

// Two profiling cycles of one process (Kineto's own samples: one pid, steps
// 5-10 and 16-21): one rank, two cycles by start time, said so; never ranks 0 and 1.
TEST(PlanRanks, CyclesOfOneProcessAreCyclesOfOneRank) {
  Trace late = load(kCycle1), early = load(kCycle0);
  std::vector<TraceOrigin> origins{origin_of(late), origin_of(early)};
  ASSERT_GE(origins[0].host_pid, 0);
  EXPECT_EQ(origins[0].host_pid, origins[1].host_pid);
  const RankPlan plan = plan_ranks(origins);
  ASSERT_EQ(plan.ranks, std::vector<int>{0});
  EXPECT_EQ(plan.assignments[0].rank, 0);
  EXPECT_EQ(plan.assignments[1].rank, 0);
  EXPECT_EQ(plan.assignments[0].source, RankSource::kFileName);
  EXPECT_EQ(plan.assignments[0].cycles, 2);
  EXPECT_EQ(plan.assignments[1].cycle, 0);  // the earlier file's events come first
  EXPECT_EQ(plan.assignments[0].cycle, 1);
  EXPECT_EQ(plan.representative(0), 0u);    // the last cycle stands for the rank
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_TRUE(contains(plan.warnings[0], "2 profiling cycles")) << plan.warnings[0];
}

// The same cycles without the name's rank: still one rank, not two "by file order".
TEST(PlanRanks, UnrankedCyclesShareOneRank) {
  std::vector<TraceOrigin> origins{origin_of(load(kCycle0)), origin_of(load(kCycle1))};
  for (auto& o : origins) o.file = fs::path(o.file).filename().string().replace(0, 7, "host_25738");
  const RankPlan plan = plan_ranks(origins);
  EXPECT_EQ(plan.ranks, std::vector<int>{0});
  EXPECT_EQ(plan.assignments[1].cycles, 2);
}

// Two traces that both say rank 0 and come from two jobs: an error naming both.
TEST(PlanRanks, DuplicateRankNamesBothFiles) {
  const fs::path a = kPublic / "hta__critical_path__cuda_event_sync__event_sync_trace.json.gz";
  const fs::path b = kPublic / "hta__trace_filter/sampled_rank-0.json.gz";
  std::vector<TraceOrigin> origins{origin_of(load(a)), origin_of(load(b))};
  EXPECT_EQ(origins[0].rank, 0);
  EXPECT_EQ(origins[1].rank, 0);
  try {
    plan_ranks(origins);
    FAIL() << "a duplicate rank must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(contains(e.what(), a.string())) << e.what();
    EXPECT_TRUE(contains(e.what(), b.string())) << e.what();
    EXPECT_TRUE(contains(e.what(), "distributedInfo.rank")) << e.what();
  }
}

// The same profiling window twice (a copy under a cycle-like name) is no cycle.
TEST(PlanRanks, TheSameWindowTwiceIsNoCycle) {
  TraceOrigin a = origin_of(load(kCycle0));
  TraceOrigin b = a;
  b.file = (kCycles / "worker0.1623143999999.pt.trace.json.gz").string();
  EXPECT_THROW(plan_ranks({a, b}), Error);
}

// The trace's rank beats the order of names: HTA's rank-1 inference trace named
// "a…" and SGLang's rank-0 trace named "b…" — rank 0 is the second file.
TEST(PlanRanks, RankFromTheTraceHeadNotTheFileOrder) {
  const fs::path dir = fs::temp_directory_path() / "magpie_rank_head_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kPublic / "hta__trace_file_list__inference_rank_1.json.gz", dir / "a.json.gz");
  fs::copy_file(kPublic / "tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
                dir / "b.json.gz");
  std::vector<TraceOrigin> origins{peek_origin(dir / "a.json.gz"), peek_origin(dir / "b.json.gz")};
  EXPECT_EQ(origins[0].rank, 1);
  EXPECT_EQ(origins[1].rank, 0);
  const RankPlan plan = plan_ranks(origins);
  EXPECT_EQ(plan.representative(0), 1u);
  EXPECT_TRUE(plan.warnings.empty());
  fs::remove_all(dir);
}

// No rank anywhere: file order, with a warning naming each file.
TEST(PlanRanks, FileOrderIsNeverSilent) {
  const fs::path dir = kPublic / "tracelens__agent_evals__test04_gemm_mm_vs_linear";
  std::vector<TraceOrigin> origins{origin_of(load(dir / "trace1.json")),
                                   origin_of(load(dir / "trace2.json"))};
  const RankPlan plan = plan_ranks(origins);
  EXPECT_EQ(plan.ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(plan.warnings.size(), 2u);
  EXPECT_TRUE(contains(plan.warnings[0], "trace1.json") && contains(plan.warnings[0], "file order"));
  // A lone trace is rank 0 without a word.
  EXPECT_TRUE(plan_ranks({origins[0]}).warnings.empty());
}

// TraceLens' TraceFuse merge of HTA's two sampled ranks: split back into the
// two ranks, each with exactly the kernels of its original file.
TEST(MergedTrace, SplitByRankProcessNames) {
  EXPECT_EQ(rank_from_process_name("RANK 1 - GPU"), 1);
  EXPECT_EQ(rank_from_process_name("python3"), std::nullopt);
  std::vector<Trace> parts =
      load_trace_ranks(kRules / "tracefuse_merged_sampled_rank_0_1.json.gz", IngestOptions{});
  ASSERT_EQ(parts.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    const Trace& part = parts[static_cast<size_t>(rank)];
    EXPECT_EQ(part.rank, rank);
    EXPECT_EQ(part.rank_source, RankSource::kProcessName);
    size_t kernels = 0;
    for (const auto& e : events_of(kPublic / ("hta__trace_filter/sampled_rank-" +
                                              std::to_string(rank) + ".json.gz"))) {
      kernels += e.value("cat", "") == "kernel";
    }
    size_t got = 0;
    for (size_t r = 0; r < part.events.size(); ++r) got += part.events.category[r] == Category::kKernel;
    EXPECT_EQ(got, kernels) << "rank " << rank;
  }
  const RankPlan plan = plan_ranks({origin_of(parts[0]), origin_of(parts[1])});
  EXPECT_EQ(plan.ranks, (std::vector<int>{0, 1}));
}

// A Chrome trace (headless Chromium, category "gpu" = tasks of the browser's
// GPU process on its CPU threads) holds no device work: gap analysis exits 6.
TEST(KindsOfTrace, BrowserGpuCategoryIsNotDeviceWork) {
  const fs::path chrome = kRules / "chrome_headless_gpu_process.json.gz";
  size_t gpu_category = 0;
  for (const auto& e : events_of(chrome)) gpu_category += e.value("cat", "") == "gpu";
  ASSERT_GT(gpu_category, 100u);
  const analysis::RankGapResult r = analysis::analyze_rank(load(chrome), analysis::GapAnalysisConfig{});
  EXPECT_TRUE(r.kernels.empty());
  const fs::path dir = fs::temp_directory_path() / "magpie_chrome_rule_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(chrome, dir / chrome.filename());
  try {
    analysis::run_gap_analysis(dir, analysis::GapAnalysisRunOptions{});
    FAIL() << "a browser trace must not pass as GPU kernels";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoGpuEvents) << e.what();
  }
  fs::remove_all(dir);
}

// Copies and sets are GPU work in every Kineto version: legacy "Memcpy"/"Memset"
// (Kineto's 2021 samples) count in the totals exactly as gpu_memcpy/gpu_memset do.
TEST(KindsOfTrace, MemcpyAndMemsetCountInOldAndNewTraces) {
  for (const fs::path& p : {kCycle0, kPublic / "hta__trace_filter/sampled_rank-0.json.gz"}) {
    double expected_us = 0;
    size_t copies = 0;
    for (const auto& e : events_of(p)) {
      const std::string cat = e.value("cat", "");
      if (cat == "Kernel" || cat == "kernel" || cat == "Memcpy" || cat == "gpu_memcpy" ||
          cat == "Memset" || cat == "gpu_memset") {
        expected_us += e.value("dur", 0.0);
        copies += cat != "Kernel" && cat != "kernel";
      }
    }
    ASSERT_GT(copies, 0u) << p;
    const auto r = analysis::analyze_rank(load(p), analysis::GapAnalysisConfig{});
    EXPECT_NEAR(r.total_duration_us, expected_us, 1e-3 * expected_us) << p;
  }
}

// Communication outside NCCL/RCCL, by the kernel names their sources define.
TEST(KindsOfTrace, CommunicationKernelsOutsideNccl) {
  for (const char* name : {
           "void deep_ep::internode::dispatch<true, 8, 3, 1, 4, 8>(int4*, float*, int*, long*)",
           "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(__nv_bfloat16*, float*)",
           "void uccl::ep::internode::combine<8>(void*, int)",
           "void nvshmemi_transfer_rma_nbi<(nvshmemi_op_t)0>(void*, void const*, unsigned long)",
           "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals)",
           "void sglang::cross_device_reduce_2stage<__half, 4>(sglang::RankData*, sglang::RankSignals)",
           "void mscclpp::allreduce6<__nv_bfloat16>(__nv_bfloat16*, mscclpp::DeviceHandle)",
       }) {
    EXPECT_EQ(sources::parse_kernel_name(name).category, sources::KernelCategory::kCommunication)
        << name;
  }
  EXPECT_NE(sources::parse_kernel_name("void at::native::vectorized_elementwise_kernel<4>(int)").category,
            sources::KernelCategory::kCommunication);
}

}  // namespace
}  // namespace magpie::trace
