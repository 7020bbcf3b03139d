// SourceIndex and Magpie's source columns on the fixture repository
// tests/data/sources/fixture_repo and on small repositories made per test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "sources/detail/repo_files.hpp"
#include "sources/magpie_columns.hpp"
#include "sources/source_index.hpp"

namespace magpie::sources {
namespace {

namespace fs = std::filesystem;

const fs::path& fixture_repo() {
  static const fs::path root = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/sources/fixture_repo";
  return root;
}

class SourceIndexTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    index_ = new SourceIndex(SourceIndex::build({fixture_repo()}, 2));
  }
  static void TearDownTestSuite() {
    delete index_;
    index_ = nullptr;
  }
  static SourceMatch find(std::string_view raw) { return index_->find(parse_kernel_name(raw)); }
  static SourceIndex* index_;
};
SourceIndex* SourceIndexTest::index_ = nullptr;

TEST_F(SourceIndexTest, ScansEverySourceFileOnce) {
  EXPECT_EQ(index_->files_scanned(), 11u);  // README.md is not source
  EXPECT_GT(index_->bytes_scanned(), 3000u);
  EXPECT_EQ(index_->files_skipped(), 0u);
  // 9 __global__ (one is the macro's parameter name), 5 Python defs, 1 class template.
  EXPECT_EQ(index_->definitions(), 15u);
}

TEST_F(SourceIndexTest, TemplatedKernelSplitOverLinesIsExact) {
  const SourceMatch m = find(
      "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, float)");
  ASSERT_EQ(m.confidence, Confidence::kExact) << m.note;
  ASSERT_EQ(m.candidates.size(), 1u);
  EXPECT_EQ(m.candidate_count, 1u);
  EXPECT_EQ(m.candidates[0].repo, detail::normalize_repo_root(fixture_repo()));
  EXPECT_EQ(m.candidates[0].file, "csrc/layernorm_kernels.cu");
  EXPECT_EQ(m.candidates[0].line, 10);
  EXPECT_EQ(m.candidates[0].kind, "__global__");
}

TEST_F(SourceIndexTest, HipKernelWithLaunchBoundsIsExact) {
  const SourceMatch m = find(
      "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, "
      "false>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int "
      "const*, int, int, float const*)");
  ASSERT_EQ(m.confidence, Confidence::kExact) << m.note;
  EXPECT_EQ(m.candidates[0].file, "csrc/rocm/attention.hip");
  EXPECT_EQ(m.candidates[0].line, 7);
}

TEST_F(SourceIndexTest, LaunchBoundsMacroBeforeTheNameIsSkipped) {
  const SourceMatch m = find("void gelu_kernel(float*)");
  ASSERT_EQ(m.confidence, Confidence::kExact) << m.note;
  EXPECT_EQ(m.candidates[0].file, "csrc/activation_kernels.cu");
  EXPECT_EQ(m.candidates[0].line, 11);
  EXPECT_EQ(find("C10_LAUNCH_BOUNDS_1").confidence, Confidence::kNotFound);
}

TEST_F(SourceIndexTest, DeclarationsAreNotDefinitions) {
  const SourceMatch m = find("void vllm::silu_and_mul_kernel(float*, float const*, int)");
  ASSERT_EQ(m.confidence, Confidence::kExact) << m.note;
  EXPECT_EQ(m.candidates[0].file, "csrc/activation_kernels.cu");
  EXPECT_EQ(m.candidates[0].line, 4);
}

TEST_F(SourceIndexTest, DuplicatedKernelIsAmbiguousAndListsBoth) {
  const SourceMatch m = find("void scaled_quant_kernel<float>(float*, float const*, float)");
  ASSERT_EQ(m.confidence, Confidence::kAmbiguous) << m.note;
  EXPECT_EQ(m.candidate_count, 2u);
  ASSERT_EQ(m.candidates.size(), 2u);
  EXPECT_EQ(m.candidates[0].file, "csrc/quantization/scaled_quant.cu");
  EXPECT_EQ(m.candidates[0].line, 3);
  EXPECT_EQ(m.candidates[1].file, "csrc/rocm/scaled_quant.hip");
  EXPECT_EQ(m.candidates[1].line, 5);
  EXPECT_NE(m.note.find("2 definitions of 'scaled_quant_kernel'"), std::string::npos) << m.note;
}

TEST_F(SourceIndexTest, TritonKernelsUnderStackedOrCalledDecorators) {
  const SourceMatch fwd = find("_fwd_kernel");
  ASSERT_EQ(fwd.confidence, Confidence::kExact) << fwd.note;
  EXPECT_EQ(fwd.candidates[0].file, "python/ops/triton_attention.py");
  EXPECT_EQ(fwd.candidates[0].line, 11);
  EXPECT_EQ(fwd.candidates[0].kind, "triton.jit");
  const SourceMatch unified = find("kernel_unified_attention_2d");
  ASSERT_EQ(unified.confidence, Confidence::kExact) << unified.note;
  EXPECT_EQ(unified.candidates[0].line, 16);
  EXPECT_EQ(unified.candidates[0].kind, "triton.jit");
  // Old Triton appended a specialisation suffix to the jit function's name.
  EXPECT_EQ(find("_fwd_kernel_0d1d2d3d4d5c").confidence, Confidence::kExact);
}

TEST_F(SourceIndexTest, PlainPythonDefIsAWeakerExactMatch) {
  const SourceMatch m = find("launch_attention");
  ASSERT_EQ(m.confidence, Confidence::kExact) << m.note;
  EXPECT_EQ(m.candidates[0].kind, "def");
}

TEST_F(SourceIndexTest, NumberedTritonNameIsPartial) {
  const SourceMatch m = find("_fwd_kernel_0");
  ASSERT_EQ(m.confidence, Confidence::kPartial) << m.note;
  ASSERT_EQ(m.candidates.size(), 1u);
  EXPECT_EQ(m.candidates[0].line, 11);
}

TEST_F(SourceIndexTest, InductorKernelsExactAndRenumbered) {
  const SourceMatch exact = find("triton_poi_fused_add_mul_1");
  ASSERT_EQ(exact.confidence, Confidence::kExact) << exact.note;
  EXPECT_EQ(exact.candidates[0].file, "generated/inductor_output_code.py");
  EXPECT_EQ(exact.candidates[0].line, 12);
  // The only copy is the one embedded in output code (a debug folder's shape).
  EXPECT_EQ(exact.candidates[0].kind, "triton.jit (output code)");
  const SourceMatch renumbered = find("triton_poi_fused_add_mul_3");
  ASSERT_EQ(renumbered.confidence, Confidence::kPartial) << renumbered.note;
  EXPECT_EQ(renumbered.candidates[0].line, 12);
}

TEST_F(SourceIndexTest, LongerVariantOfADefinedKernelIsPartial) {
  const SourceMatch m = find("void vllm::fused_add_rms_norm_kernel_v2(float*, float const*)");
  ASSERT_EQ(m.confidence, Confidence::kPartial) << m.note;
  EXPECT_EQ(m.candidates[0].file, "csrc/layernorm_kernels.cu");
  EXPECT_EQ(m.candidates[0].line, 16);
}

TEST_F(SourceIndexTest, MacroDefinedKernelIsFoundByItsLaunch) {
  const SourceMatch m = find("macro_defined_kernel(float*)");
  ASSERT_EQ(m.confidence, Confidence::kPartial) << m.note;
  EXPECT_EQ(m.candidates[0].file, "csrc/layernorm_kernels.cu");
  EXPECT_EQ(m.candidates[0].line, 27);
  EXPECT_EQ(m.candidates[0].kind, "launch_registration");
}

TEST_F(SourceIndexTest, OpRegistrationsArePartialEvidence) {
  const SourceMatch m = find("rms_norm");
  ASSERT_EQ(m.confidence, Confidence::kPartial) << m.note;
  EXPECT_EQ(m.candidate_count, 2u);  // ops.def and ops.impl
  EXPECT_EQ(m.candidates[0].file, "csrc/torch_bindings.cpp");
  EXPECT_EQ(m.candidates[0].line, 5);
}

TEST_F(SourceIndexTest, LibraryKernelsAreLibraryOwned) {
  const SourceMatch m = find("nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT");
  EXPECT_EQ(m.confidence, Confidence::kLibraryOwned);
  EXPECT_TRUE(m.candidates.empty());
  EXPECT_NE(m.note.find("cuBLAS"), std::string::npos) << m.note;
  const SourceMatch copy = find("Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(copy.confidence, Confidence::kLibraryOwned);
  EXPECT_NE(copy.note.find("runtime memory copy"), std::string::npos) << copy.note;
}

TEST_F(SourceIndexTest, LibraryKernelDefinedInTheReposIsStillReported) {
  const SourceMatch aten = find(
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)");
  ASSERT_EQ(aten.confidence, Confidence::kExact) << aten.note;
  EXPECT_EQ(aten.candidates[0].file, "third_party/fake_aten/CUDALoops.cuh");  // third_party kept
  EXPECT_NE(aten.note.find("library-owned"), std::string::npos) << aten.note;
  // A ck_tile kernel is an instance of a class template.
  const SourceMatch ck = find("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdIfEEEEvv");
  ASSERT_EQ(ck.confidence, Confidence::kExact) << ck.note;
  EXPECT_EQ(ck.candidates[0].file, "third_party/ck_tile/rmsnorm2d_fwd_kernel.hpp");
  EXPECT_EQ(ck.candidates[0].line, 6);
  EXPECT_EQ(ck.candidates[0].kind, "template");
}

TEST_F(SourceIndexTest, AbsentKernelIsNotFound) {
  const SourceMatch m = find(
      "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
      "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)");
  EXPECT_EQ(m.confidence, Confidence::kNotFound);
  EXPECT_TRUE(m.candidates.empty());
  EXPECT_EQ(m.candidate_count, 0u);
  // Short shared words are not near names.
  EXPECT_EQ(find("void rms_kernel(float*)").confidence, Confidence::kNotFound);
}

TEST(SourceIndexBuildTest, MissingRepositoryIsAnError) {
  try {
    SourceIndex::build({fs::path(MAGPIE_SOURCE_DIR) / "tests/data/sources/no_such_repo"});
    FAIL() << "expected magpie::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

// A throwaway repository under the system temp directory.
class TempRepo {
 public:
  explicit TempRepo(const std::string& name)
      : root_(fs::temp_directory_path() /
              ("magpie_sources_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~TempRepo() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

TEST(SourceIndexBuildTest, RepositoryGivenTwiceIsIndexedOnce) {
  const SourceIndex index = SourceIndex::build({fixture_repo(), fixture_repo() / "csrc" / ".."}, 2);
  EXPECT_EQ(index.files_scanned(), 11u);
  EXPECT_EQ(index.find(parse_kernel_name("_fwd_kernel")).confidence, Confidence::kExact);
}

TEST(SourceIndexBuildTest, SkipsVcsBuildAndVendorDirectoriesButKeepsThirdParty) {
  TempRepo repo("skip");
  const std::string kernel = "__global__ void dup_kernel(int* x) { *x = 1; }\n";
  for (const char* dir : {".git", "build", "build-release", "node_modules", "third_party", "src"}) {
    repo.write(std::string(dir) + "/k.cu", kernel);
  }
  const SourceIndex index = SourceIndex::build({repo.root(), fixture_repo()}, 1);
  const SourceMatch m = index.find(parse_kernel_name("void dup_kernel(int*)"));
  ASSERT_EQ(m.confidence, Confidence::kAmbiguous) << m.note;
  ASSERT_EQ(m.candidate_count, 2u);
  EXPECT_EQ(m.candidates[0].file, "src/k.cu");
  EXPECT_EQ(m.candidates[1].file, "third_party/k.cu");
  EXPECT_EQ(m.candidates[0].repo, detail::normalize_repo_root(repo.root()));
  // The second repository is searched too.
  EXPECT_EQ(index.find(parse_kernel_name("_fwd_kernel")).candidates.at(0).repo,
            detail::normalize_repo_root(fixture_repo()));
}

TEST(SourceIndexBuildTest, AmbiguousListIsCappedButCounted) {
  TempRepo repo("cap");
  for (int i = 0; i < 25; ++i) {
    repo.write("k" + std::to_string(i) + ".cu", "\n__global__ void many_kernel(float* x) {}\n");
  }
  for (unsigned threads : {1u, 4u}) {
    const SourceIndex index = SourceIndex::build({repo.root()}, threads);
    const SourceMatch m = index.find(parse_kernel_name("void many_kernel(float*)"));
    ASSERT_EQ(m.confidence, Confidence::kAmbiguous);
    EXPECT_EQ(m.candidate_count, 25u);
    ASSERT_EQ(m.candidates.size(), SourceMatch::kMaxCandidates);
    EXPECT_EQ(m.candidates[0].file, "k0.cu");  // same order whatever the thread count
    EXPECT_EQ(m.candidates[0].line, 2);
    EXPECT_NE(m.note.find("25 definitions"), std::string::npos);
  }
}

// An extern "C" kernel is recorded by its bare name, which looks like a Triton
// kernel's: the __global__ definition must be found all the same, and a name
// defined both ways is ambiguous rather than silently the Triton one.
TEST(SourceIndexBuildTest, ExternCKernelRecordedByItsBareNameIsExact) {
  TempRepo repo("externc");
  repo.write("csrc/scale.cu",
             "extern \"C\" __global__ void scale_rows(float* x, int n) { x[0] *= n; }\n");
  repo.write("kernels/add.py",
             "import triton\n\n@triton.jit\ndef add_rows(x_ptr, n):\n    pass\n");
  const SourceIndex index = SourceIndex::build({repo.root()}, 1);
  const SourceMatch m = index.find(parse_kernel_name("scale_rows"));
  ASSERT_EQ(m.confidence, Confidence::kExact) << m.note;
  EXPECT_EQ(m.candidates.at(0).file, "csrc/scale.cu");
  EXPECT_EQ(m.candidates.at(0).kind, "__global__");
  const SourceMatch t = index.find(parse_kernel_name("add_rows"));
  ASSERT_EQ(t.confidence, Confidence::kExact) << t.note;
  EXPECT_EQ(t.candidates.at(0).file, "kernels/add.py");

  repo.write("kernels/scale.py",
             "import triton\n\n@triton.jit\ndef scale_rows(x_ptr, n):\n    pass\n");
  const SourceIndex both = SourceIndex::build({repo.root()}, 1);
  const SourceMatch a = both.find(parse_kernel_name("scale_rows"));
  EXPECT_EQ(a.confidence, Confidence::kAmbiguous) << a.note;
  EXPECT_EQ(a.candidate_count, 2u);
}

TEST(SourceColumnsTest, HeaderIsMagpiesFifteenColumns) {
  const std::vector<std::string> expected = {"kind",
                                             "category",
                                             "source_repo",
                                             "source_file",
                                             "upstream_url",
                                             "test_file",
                                             "test_cmd",
                                             "baseline_ref_file",
                                             "baseline_ref_symbol",
                                             "baseline_ref_kind",
                                             "triton_ref_file",
                                             "triton_ref_symbol",
                                             "notes",
                                             "source_resolution",
                                             "source_error"};
  EXPECT_EQ(magpie_source_columns_header(), expected);
}

TEST(SourceColumnsTest, RepoVars) {
  const RepoVars vars = make_repo_vars({"/src/vllm", "/other/vllm/", "/", "/w/my-repo.git"});
  ASSERT_EQ(vars.entries.size(), 4u);
  EXPECT_EQ(vars.entries[0].second, "$VLLM");
  EXPECT_EQ(vars.entries[1].second, "$VLLM_2");
  EXPECT_EQ(vars.entries[1].first, "/other/vllm");
  EXPECT_EQ(vars.entries[2].second, "$REPO_2");
  EXPECT_EQ(vars.entries[3].second, "$MY_REPO_GIT");
  EXPECT_EQ(vars.var_for("/src/vllm"), "$VLLM");
}

class SourceColumnsIndexTest : public SourceIndexTest {
 protected:
  static std::vector<std::string> columns(std::string_view raw) {
    const KernelName k = parse_kernel_name(raw);
    return magpie_source_columns(k, index_->find(k), make_repo_vars({fixture_repo()}));
  }
  static constexpr size_t kKind = 0, kCategory = 1, kRepo = 2, kFile = 3, kNotes = 12,
                          kResolution = 13, kError = 14;
};

TEST_F(SourceColumnsIndexTest, ExactMatchIsResolvedWithVarPath) {
  const auto row = columns("void vllm::rms_norm_kernel<float, 4>(float*, float const*, float)");
  ASSERT_EQ(row.size(), 15u);
  EXPECT_EQ(row[kKind], "hip_cpp");
  EXPECT_EQ(row[kCategory], "layernorm");
  EXPECT_EQ(row[kRepo], "$FIXTURE_REPO");
  EXPECT_EQ(row[kFile], "$FIXTURE_REPO/csrc/layernorm_kernels.cu:10");
  EXPECT_EQ(row[kResolution], "resolved");
  EXPECT_EQ(row[kError], "");
  EXPECT_EQ(row[kNotes].rfind("exact: ", 0), 0u) << row[kNotes];
}

TEST_F(SourceColumnsIndexTest, OtherConfidencesMapToMagpieResolutions) {
  const auto ambiguous = columns("void scaled_quant_kernel<float>(float*, float const*, float)");
  EXPECT_EQ(ambiguous[kResolution], "unresolved");
  EXPECT_EQ(ambiguous[kFile], "");
  EXPECT_NE(ambiguous[kError], "");
  EXPECT_NE(ambiguous[kNotes].find("$FIXTURE_REPO/csrc/rocm/scaled_quant.hip:5"), std::string::npos)
      << ambiguous[kNotes];
  const auto partial = columns("_fwd_kernel_0");
  EXPECT_EQ(partial[kResolution], "resolved");
  EXPECT_EQ(partial[kFile], "$FIXTURE_REPO/python/ops/triton_attention.py:11");
  EXPECT_EQ(partial[kKind], "triton_jit");
  const auto library = columns("nvjet_sm90_tst_64x16_64x16_2x1_v_bz_TNT");
  EXPECT_EQ(library[kResolution], "unsupported");
  EXPECT_EQ(library[kCategory], "gemm");
  const auto missing = columns("void vllm::rotary_embedding_kernel<float, true>(float*)");
  EXPECT_EQ(missing[kResolution], "unresolved");
  EXPECT_NE(missing[kError], "");
}

// An Inductor cache (TORCHINDUCTOR_CACHE_DIR) as torch.compile lays it out:
// each kernel in its own cXXXX.py, and the compiled module (output code)
// embedding every kernel's source as a string passed to async_compile.triton.
std::string inductor_kernel_file(const std::string& name, const std::string& body) {
  return "import triton\nimport triton.language as tl\nfrom torch._inductor.runtime import "
         "triton_heuristics\n\n"
         "@triton_heuristics.pointwise(size_hints={'x': 1024}, "
         "filename=__file__)\n@triton.jit\ndef " +
         name + "(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n    " + body + "\n";
}

TEST(SourceIndexBuildTest, InductorCacheKernelFileWinsOverOutputCodeCopy) {
  TempRepo cache("inductor");
  cache.write("ab/cabqx2kernel.py", inductor_kernel_file("triton_poi_fused_add_0", "x = 1"));
  // The same kernel file cached twice, byte for byte: one definition.
  cache.write("cd/ccdmean01.py", inductor_kernel_file("triton_per_fused_mean_2", "m = 2"));
  cache.write("ef/cefmean02.py", inductor_kernel_file("triton_per_fused_mean_2", "m = 2"));
  // Two graphs that both named a different kernel triton_red_fused_sum_1: a real conflict.
  cache.write("gh/cghsum1.py", inductor_kernel_file("triton_red_fused_sum_1", "s = 1"));
  cache.write("ij/cijsum2.py", inductor_kernel_file("triton_red_fused_sum_1", "s = 2"));
  std::string output_code =
      "from torch._inductor.async_compile import AsyncCompile\nasync_compile = AsyncCompile()\n\n";
  for (const char* k : {"triton_poi_fused_add_0", "triton_per_fused_mean_2"}) {
    output_code += std::string(k) + " = async_compile.triton('" + k + "', '''\n" +
                   inductor_kernel_file(k, "x = 1") + "''', device_str='cuda')\n\n";
  }
  output_code +=
      "def call(args):\n    triton_poi_fused_add_0.run(buf0, buf1, 1024, stream=stream0)\n";
  cache.write("zz/czzoutputcode.py", output_code);
  const SourceIndex index = SourceIndex::build({cache.root()}, 2);

  const SourceMatch add = index.find(parse_kernel_name("triton_poi_fused_add_0"));
  ASSERT_EQ(add.confidence, Confidence::kExact) << add.note;
  EXPECT_EQ(add.candidates.at(0).file, "ab/cabqx2kernel.py");
  EXPECT_EQ(add.candidates[0].kind, "triton.jit");
  ASSERT_EQ(add.call_sites.size(), 1u);
  EXPECT_EQ(add.call_sites[0].file, "zz/czzoutputcode.py");
  EXPECT_EQ(add.call_sites[0].kind, "triton.jit (output code)");

  const SourceMatch mean = index.find(parse_kernel_name("triton_per_fused_mean_2"));
  ASSERT_EQ(mean.confidence, Confidence::kExact) << mean.note;
  EXPECT_NE(mean.note.find("+1 identical file"), std::string::npos) << mean.note;

  const SourceMatch sum = index.find(parse_kernel_name("triton_red_fused_sum_1"));
  EXPECT_EQ(sum.confidence, Confidence::kAmbiguous) << sum.note;
  EXPECT_EQ(sum.candidate_count, 2u);

  // Magpie's columns: the kernel file is the source, the compiled module the caller.
  const RepoVars vars = make_repo_vars({cache.root()});
  const auto row = magpie_source_columns(parse_kernel_name("triton_poi_fused_add_0"), add, vars);
  EXPECT_NE(row[3].find("ab/cabqx2kernel.py:7"), std::string::npos) << row[3];
  EXPECT_NE(row[12].find("called from"), std::string::npos) << row[12];
  EXPECT_NE(row[12].find("zz/czzoutputcode.py"), std::string::npos) << row[12];
  EXPECT_EQ(row[13], "resolved");
}

}  // namespace
}  // namespace magpie::sources
