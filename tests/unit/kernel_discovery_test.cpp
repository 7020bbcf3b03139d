#include "kernel/kernel_discovery.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace magpie::kernel {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/discovery";

// "lang:relative/file:name" for every kernel, relative to `root`.
std::set<std::string> keys(const DiscoveryResult& r, const fs::path& root) {
  std::set<std::string> out;
  for (const auto& k : r.kernels) {
    out.insert(std::string(to_string(k.type)) + ":" + k.file.lexically_relative(root).string() +
               ":" + k.name);
  }
  return out;
}

const DiscoveredKernel* find(const DiscoveryResult& r, const std::string& name) {
  for (const auto& k : r.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

DiscoveryResult discover(const fs::path& root, std::string type = "all", bool tests = false,
                         bool examples = true) {
  DiscoveryRequest req;
  req.project_path = root;
  req.kernel_type = std::move(type);
  req.include_tests = tests;
  req.include_examples = examples;
  return discover_kernels(req);
}

// A scratch copy of the fixture project, so folders git ignores (build/, .venv/)
// can be added to it.
class KernelDiscoveryScratch : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("magpie_discovery_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    fs::copy(kFixtures / "project", root_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  fs::path root_;
};

const std::set<std::string> kProjectKernels{
    "cuda:cuda/common.cuh:real_header_fill",
    "cuda:cuda/tricky.cu:ops::real_in_namespace",
    "cuda:cuda/tricky.cu:real_plain",
    "cuda:cuda/tricky.cu:real_templated",
    "cuda:cuda/tricky.cu:real_extern_c",
    "cuda:cuda/tricky.cu:real_via_macro",
    "cuda:cuda/tricky.cu:real_after_macro",
    "cuda:cuda/tricky.cu:real_else_branch",
    "cuda:cuda/tricky.cu:real_trailing_macro",
    "cuda:cuda/portable.cu:real_portable",
    "cuda:examples/demo.cu:example_kernel",
    "cuda:mixed/plain_kernel.h:real_undecided",
    "hip:hip/hipified.cu:real_hipified",
    "hip:hip/reduce.cpp:real_hip_reduce",
    "hip:hip/saxpy.hip:real_hip_saxpy",
    "pytorch:torch/models.py:RealFull",
    "pytorch:torch/models.py:RealImportedName",
    "pytorch:torch/models.py:RealMLP",
    "pytorch:torch/models.py:RealMultiBase",
    "pytorch:torch/models.py:RealSubclass",
    "triton:triton/kernels.py:real_add",
    "triton:triton/kernels.py:real_alias",
    "triton:triton/kernels.py:real_autotuned",
    "triton:triton/kernels.py:real_imported_jit",
    "triton:triton/kernels.py:real_jit_with_args",
};

TEST(KernelDiscovery, FindsEveryKernelOfTheFixtureProjectAndNothingElse) {
  const fs::path root = kFixtures / "project";
  auto r = discover(root);
  EXPECT_EQ(keys(r, root), kProjectKernels);
  // real_templated twice: the primary template and its explicit specialisation.
  EXPECT_EQ(std::count_if(r.kernels.begin(), r.kernels.end(),
                          [](auto& k) { return k.name == "real_templated"; }),
            2);
  EXPECT_EQ(r.kernels.size(), kProjectKernels.size() + 1);
  // tricky.cu portable.cu common.cuh saxpy.hip hipified.cu reduce.cpp plain_kernel.h host_only.cpp,
  // 2 .py, examples/demo.cu; tests/, test_*.py and *_test.* are skipped.
  EXPECT_EQ(r.files_scanned, 11u);
  for (const auto& k : r.kernels) EXPECT_TRUE(k.file.is_absolute()) << k.file;
}

TEST(KernelDiscovery, ReportsTheLineOfTheName) {
  auto r = discover(kFixtures / "project");
  // Multi-line signature: template line, __global__ __launch_bounds__ line, then the name.
  const auto* templated = find(r, "real_templated");
  ASSERT_NE(templated, nullptr);
  EXPECT_EQ(templated->line, 20);
  EXPECT_EQ(find(r, "real_plain")->line, 13);
  EXPECT_EQ(find(r, "real_hip_reduce")->line, 5);
  EXPECT_EQ(find(r, "real_add")->line, 12);
  EXPECT_EQ(find(r, "real_autotuned")->line, 27);  // the def line, below the decorators
  EXPECT_EQ(find(r, "RealMLP")->line, 6);
  // Sorted by file, then line.
  EXPECT_TRUE(std::is_sorted(r.kernels.begin(), r.kernels.end(), [](const auto& a, const auto& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  }));
}

TEST(KernelDiscovery, FiltersByKernelType) {
  const fs::path root = kFixtures / "project";
  for (const auto& [type, lang] :
       std::vector<std::pair<std::string, KernelLanguage>>{{"hip", KernelLanguage::kHip},
                                                           {"CUDA", KernelLanguage::kCuda},
                                                           {"triton", KernelLanguage::kTriton},
                                                           {"pytorch", KernelLanguage::kPyTorch},
                                                           {"torch", KernelLanguage::kPyTorch}}) {
    auto r = discover(root, type);
    ASSERT_FALSE(r.kernels.empty()) << type;
    for (const auto& k : r.kernels) EXPECT_EQ(k.type, lang) << type << " " << k.name;
  }
  EXPECT_EQ(discover(root, "hip").kernels.size(), 3u);
  EXPECT_EQ(discover(root, "triton").kernels.size(), 5u);
  // Python-only filters do not read C sources.
  EXPECT_EQ(discover(root, "triton").files_scanned, 2u);
}

TEST(KernelDiscovery, UnknownTypeNamesTheAllowedValues) {
  try {
    discover(kFixtures / "project", "opencl");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    const std::string what = e.what();
    EXPECT_NE(what.find("opencl"), std::string::npos) << what;
    EXPECT_NE(what.find("hip, cuda, triton, pytorch, all"), std::string::npos) << what;
  }
}

TEST(KernelDiscovery, MissingPathIsNotFound) {
  try {
    discover(kFixtures / "no_such_project");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no_such_project"), std::string::npos) << e.what();
  }
  EXPECT_THROW(discover(""), Error);
}

TEST(KernelDiscovery, TestsAreSkippedUnlessAsked) {
  const fs::path root = kFixtures / "project";
  const std::set<std::string> test_kernels{"triton:tests/test_kernel_check.py:test_only_kernel",
                                           "pytorch:src/test_helpers.py:TestOnlyModule",
                                           "cuda:src/scale_test.cu:test_only_cuda"};
  auto without = keys(discover(root), root);
  auto with = keys(discover(root, "all", /*tests=*/true), root);
  for (const auto& k : test_kernels) {
    EXPECT_FALSE(without.contains(k)) << k;
    EXPECT_TRUE(with.contains(k)) << k;
  }
  EXPECT_EQ(with.size(), without.size() + test_kernels.size());
}

TEST(KernelDiscovery, ExamplesCanBeLeftOut) {
  const fs::path root = kFixtures / "project";
  EXPECT_TRUE(keys(discover(root), root).contains("cuda:examples/demo.cu:example_kernel"));
  EXPECT_FALSE(keys(discover(root, "all", false, /*examples=*/false), root)
                   .contains("cuda:examples/demo.cu:example_kernel"));
}

TEST(KernelDiscovery, HeaderWithoutVendorIncludesFollowsAHipOnlyProject) {
  const fs::path root = kFixtures / "hip_only";
  auto r = discover(root);
  EXPECT_EQ(keys(r, root),
            (std::set<std::string>{"hip:kernels.hip:hip_main", "hip:shared.h:hip_shared"}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("taken as hip"), std::string::npos) << r.warnings[0];
}

TEST(KernelDiscovery, OneFileCanBeScannedDirectly) {
  auto r = discover(kFixtures / "project/hip/saxpy.hip");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].name, "real_hip_saxpy");
  EXPECT_EQ(r.kernels[0].type, KernelLanguage::kHip);
  EXPECT_EQ(r.files_scanned, 1u);
}

TEST_F(KernelDiscoveryScratch, SkipsBuildTreesEnvironmentsAndVcsFolders) {
  const std::string kernel = "__global__ void generated(float* p) { p[0] = 0; }\n";
  const std::string module = "import torch.nn as nn\nclass Vendored(nn.Module):\n    pass\n";
  write("build/gen.cu", kernel);
  write("build-debug/gen.cu", kernel);
  write("cmake-build-release/gen.cu", kernel);
  write("out/CMakeCache.txt", "");
  write("out/gen.cu", kernel);
  write(".git/hooks/k.cu", kernel);
  write("node_modules/pkg/k.cu", kernel);
  write(".venv/lib/python3.11/site-packages/m.py", module);
  write("env311/pyvenv.cfg", "home = /usr/bin\n");
  write("env311/lib/m.py", module);
  write("__pycache__/m.py", module);
  write("pkg.egg-info/m.py", module);
  write("third_party/lib/kept.cu", "__global__ void kept_vendored(float* p) {}\n");
  auto found = keys(discover(root_), root_);
  auto expected = kProjectKernels;
  expected.insert("cuda:third_party/lib/kept.cu:kept_vendored");
  EXPECT_EQ(found, expected);
}

TEST_F(KernelDiscoveryScratch, LargeFilesAreSkippedWithAWarning) {
  std::string big(17u << 20, ' ');
  big += "__global__ void huge(float* p) {}\n";
  write("cuda/huge.cu", big);
  auto r = discover(root_, "cuda");
  EXPECT_EQ(find(r, "huge"), nullptr);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("huge.cu"), std::string::npos) << r.warnings[0];
}

TEST(KernelDiscovery, RepositoryExamples) {
  const fs::path root = fs::path(MAGPIE_SOURCE_DIR) / "examples";
  auto r = discover(root);
  EXPECT_EQ(keys(r, root),
            (std::set<std::string>{
                "cuda:kernels/common/harness.cuh:flush_l2_by_reading",
                "pytorch:autocast_trace/record_autocast.py:ConvLinear",
                "pytorch:h200_traces/record_traces.py:Block",
                "pytorch:h200_traces/record_traces.py:TinyLlama",
                "triton:kernels/cheats/fused.py:_swiglu_kernel",
                "cuda:kernels/matmul/matmul_naive.cu:matmul_naive",
                "cuda:kernels/matmul/matmul_tiled.cu:matmul_tiled",
                "cuda:kernels/validation/vector_add_gridstride.cu:vector_add_gridstride",
                "cuda:kernels/vector_add/vector_add.cu:vector_add",
                "triton:kernels/softmax/softmax_triton.py:_softmax_rows",
                "triton:loop/rowscale_triton.py:_rowscale",
            }));
  EXPECT_EQ(find(r, "_softmax_rows")->line, 10);
  EXPECT_TRUE(r.warnings.empty());
}

}  // namespace
}  // namespace magpie::kernel
