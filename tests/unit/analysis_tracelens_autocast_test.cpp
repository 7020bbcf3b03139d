// The roofline tables on real traces recorded under torch.autocast (issue 26,
// item 7): the op the user wrote gets its subtree's kernels, FLOPs are counted
// once, and no rate above the device's peak goes unflagged. The traces were
// recorded on an H100 by examples/autocast_trace/record_autocast.py
// (tests/data/autocast/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/gpu_arch.hpp"
#include "analysis/roofline_table.hpp"
#include "analysis/stage_splitter.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/autocast";

struct Loaded {
  trace::Trace trace;
  trace::TraceLinks links;
};

Loaded load(const std::string& name) {
  Loaded l{trace::load_trace(kData / name, {}), {}};
  l.links = trace::links_of(l.trace);
  return l;
}

StageAnalysis whole(const Loaded& l, const GpuArch* arch) {
  static std::vector<uint32_t> rows;
  rows = whole_trace_iteration(l.trace).gpu_rows;
  return analyze_stage({{&l.trace, &l.links, nullptr, nullptr}, rows, nullptr, arch});
}

const OpGroup* group(const StageAnalysis& a, std::string_view name) {
  auto it = std::find_if(a.groups.begin(), a.groups.end(),
                         [&](const OpGroup& g) { return g.name == name; });
  return it == a.groups.end() ? nullptr : &*it;
}

std::set<std::string> kernels_of(const Loaded& l, const StageAnalysis& a, std::string_view op) {
  std::set<std::string> out;
  for (const auto& c : a.calls) {
    if (c.name != op) continue;
    for (uint32_t r : c.gpu_rows) out.insert(std::string(l.trace.name(r)));
  }
  return out;
}

bool any_contains(const std::set<std::string>& names, std::string_view part) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// Before: aten::conv1d got only its cast kernels (1882 TFLOP/s on an A100 in
// the issue), and aten::_convolution counted the FLOPs again with the cuDNN kernel.
TEST(TracelensAutocast, OuterOpGetsItsSubtreeKernelsAndFlopsOnce) {
  const Loaded l = load("autocast_shapes.json.gz");
  const GpuArch arch = *find_gpu_arch("H100", builtin_gpu_archs());
  const StageAnalysis a = whole(l, &arch);

  const OpGroup* conv = group(a, "aten::conv1d");
  ASSERT_NE(conv, nullptr);
  ASSERT_TRUE(conv->cost);
  EXPECT_EQ(conv->category, "CONV_fwd");
  const auto conv_kernels = kernels_of(l, a, "aten::conv1d");
  EXPECT_TRUE(any_contains(conv_kernels, "xmma_fprop")) << "the cuDNN kernel is the conv's";
  EXPECT_TRUE(any_contains(conv_kernels, "bfloat16_copy")) << "and so are its autocast casts";
  // Inputs are fp32; the convolution ran in bf16 on the matrix units.
  EXPECT_EQ(conv->first.compute_spec, "matrix_bf16");

  const OpGroup* linear = group(a, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->category, "GEMM");
  EXPECT_TRUE(any_contains(kernels_of(l, a, "aten::linear"), "nvjet"));
  EXPECT_EQ(linear->first.compute_spec, "matrix_bf16");

  // The inner ops of a modelled op are not reported (their FLOPs would count twice).
  for (const char* inner : {"aten::convolution", "aten::_convolution", "aten::cudnn_convolution",
                            "aten::matmul"}) {
    EXPECT_TRUE(kernels_of(l, a, inner).empty()) << inner;
  }
  // conv1d(x [8, 256, 2048], w [512, 256, 3]): 2·N·K·L·C·R (+ bias) FLOPs, once per call.
  EXPECT_NEAR(conv->cost->flops, 2.0 * 8 * 512 * 2048 * 256 * 3 + 8.0 * 512 * 2048, 1.0);

  // Every rate is within the device's peak, or flagged with the reason.
  for (const OpGroup& g : a.groups) {
    if (!g.cost || g.first.peak_tflops <= 0) continue;
    const bool above = g.mean_achieved_tflops > g.first.peak_tflops ||
                       g.mean_achieved_tbps > arch.mem_bw_tbps;
    if (above) {
      EXPECT_FALSE(g.above_peak.empty()) << g.name;
    }
    EXPECT_LE(g.mean_achieved_tflops, g.first.peak_tflops) << g.name << " " << g.above_peak;
  }
}

// A rate above the peak is flagged, with the numbers and the likely cause.
TEST(TracelensAutocast, PeakCheckFlagsImpossibleRates) {
  RooflineFigures f;
  f.compute_spec = "matrix_bf16";
  f.peak_tflops = 312;
  f.mem_bw_tbps = 2.0;
  EXPECT_EQ(peak_check(f, 300, 1.9), "");
  const std::string compute = peak_check(f, 1882, 1.0);
  EXPECT_NE(compute.find("above the matrix_bf16 compute peak (1882 > 312 TFLOP/s)"),
            std::string::npos)
      << compute;
  const std::string memory = peak_check(f, 1, 2.5);
  EXPECT_NE(memory.find("above the memory bandwidth (2.5 > 2 TB/s)"), std::string::npos) << memory;
  RooflineFigures none;  // no arch: nothing to check against
  EXPECT_EQ(peak_check(none, 1e9, 1e9), "");
}

// Without recorded shapes no op has a model: categories come from the op's
// name, else its kernels, as kernel_summary says (item 8). Before: all "other".
TEST(TracelensAutocast, OpsWithoutShapesAreCategorisedByName) {
  const Loaded l = load("autocast_noshapes.json.gz");
  const GpuArch arch = *find_gpu_arch("H100", builtin_gpu_archs());
  const StageAnalysis a = whole(l, &arch);
  std::map<std::string, std::string> category;
  size_t gemm_kernels = 0;
  for (const auto& c : a.calls) {
    EXPECT_FALSE(c.cost) << c.name;
    category[c.name] = c.category;
    // Every kernel kernel_summary calls GEMM belongs to an op the op tables
    // call a matrix op.
    for (uint32_t r : c.gpu_rows) {
      if (sources::parse_kernel_name(l.trace.name(r)).category != sources::KernelCategory::kGemm) {
        continue;
      }
      ++gemm_kernels;
      EXPECT_TRUE(c.category == "GEMM" || c.category.starts_with("CONV_"))
          << c.name << " (" << c.category << ") launched " << l.trace.name(r);
    }
  }
  EXPECT_GT(gemm_kernels, 0u);
  // The op the user wrote gets its subtree, by its name (no model without shapes).
  EXPECT_EQ(category["aten::linear"], "GEMM");
  EXPECT_EQ(category["aten::conv1d"], "CONV_fwd");
  EXPECT_EQ(category.count("aten::cudnn_convolution"), 0u);
  EXPECT_EQ(category["aten::mm"], "GEMM");  // backward
  EXPECT_EQ(category["aten::convolution_backward"], "CONV_bwd");

  EXPECT_EQ(op_category_by_name("c10d::allgather_", {}), "communication");
  EXPECT_EQ(op_category_by_name("nccl:all_reduce", {}), "communication");
  EXPECT_EQ(op_category_by_name("aten::_scaled_dot_product_flash_attention", {}), "SDPA_fwd");
  const std::vector<sources::KernelCategory> gemm{sources::KernelCategory::kGemm};
  EXPECT_EQ(op_category_by_name("my_ext::fused_linear", gemm), "GEMM");
  const std::vector<sources::KernelCategory> mixed{sources::KernelCategory::kGemm,
                                                   sources::KernelCategory::kElementwise};
  EXPECT_EQ(op_category_by_name("my_ext::fused_linear", mixed), "other");
}

// A trace without stages is one whole-trace iteration with every GPU event.
TEST(TracelensAutocast, WholeTraceIterationHoldsEveryGpuEvent) {
  const Loaded l = load("autocast_shapes.json.gz");
  const Iteration it = whole_trace_iteration(l.trace);
  size_t gpu = 0;
  for (size_t r = 0; r < l.trace.events.size(); ++r) gpu += trace::is_gpu_activity(l.trace.events.category[r]);
  EXPECT_EQ(it.gpu_rows.size(), gpu);
  EXPECT_GT(it.gpu_busy_us, 0);
  EXPECT_LE(it.gpu_busy_us, it.gpu_duration_us + 1e-6);
  EXPECT_EQ(it.stage, Stage::kUnknown);
}

}  // namespace
}  // namespace magpie::analysis
