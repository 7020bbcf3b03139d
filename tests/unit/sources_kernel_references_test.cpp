// ReferenceFinder: upstream_url, test_file/test_cmd, baseline_ref_* and
// triton_ref_* on small repositories laid out as vLLM, aiter and an Inductor
// cache lay theirs out, the first a real git checkout (git init, commit,
// remote) so that the permalink is read from git itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/child_process.hpp"
#include "sources/kernel_references.hpp"
#include "sources/magpie_columns.hpp"
#include "sources/source_index.hpp"

namespace magpie::sources {
namespace {

namespace fs = std::filesystem;

class Repo {
 public:
  explicit Repo(const std::string& name)
      : root_(fs::temp_directory_path() /
              ("magpie_refs_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~Repo() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  // git in the repository; returns its output (stdout+stderr), fails the test on error.
  std::string git(std::vector<std::string> args) const {
    ProcessSpec spec;
    spec.argv = {"git",
                 "-C",
                 root_.string(),
                 "-c",
                 "user.name=magpie",
                 "-c",
                 "user.email=magpie@example.com"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.capture_output = true;
    spec.timeout = std::chrono::milliseconds(30000);
    const ProcessResult r = run_process(spec);
    EXPECT_TRUE(r.ok()) << shell_join(spec.argv) << ": " << r.describe() << "\n" << r.output;
    return r.output;
  }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

// Lines are numbered in the files below; the tests check them.
const char* kLayernormCu =
    "#include <cuda.h>\n"                                                   // 1
    "namespace vllm {\n"                                                    // 2
    "template <typename T>\n"                                               // 3
    "__global__ void rms_norm_kernel(T* out, const T* in, float eps) {}\n"  // 4
    "}  // namespace vllm\n";
const char* kLayernormTest =
    "import torch\n"                           // 1
    "from vllm._custom_ops import rms_norm\n"  // 2
    "\n"                                       // 3
    "def ref_rms_norm(x, w, eps):\n"           // 4
    "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w\n"
    "\n"
    "def test_rms_norm(dtype):\n"
    "    pass\n"
    "\n"
    "def test_fused_add_rms_norm(dtype):\n"
    "    pass\n";
const char* kTritonRmsNorm =
    "import triton\n"                        // 1
    "import triton.language as tl\n"         // 2
    "\n"                                     // 3
    "@triton.jit\n"                          // 4
    "def _rms_norm_fwd_kernel(x_ptr, N):\n"  // 5
    "    pass\n"
    "\n"
    "@triton.jit\n"
    "def _rms_norm_bwd_dx_fused_kernel(x_ptr, N):\n"
    "    pass\n";

const std::string kRmsNormKernel = "void vllm::rms_norm_kernel<float>(float*, float const*, float)";

TEST(KernelReferences, PermalinkFromEveryRemoteSpelling) {
  const std::string c = "0123456789abcdef0123456789abcdef01234567";
  const std::string gh = "https://github.com/vllm-project/vllm/blob/" + c + "/csrc/a.cu#L12";
  EXPECT_EQ(permalink("https://github.com/vllm-project/vllm.git", c, "csrc/a.cu", 12), gh);
  EXPECT_EQ(permalink("https://github.com/vllm-project/vllm", c, "csrc/a.cu", 12), gh);
  EXPECT_EQ(permalink("https://github.com/vllm-project/vllm/\n", c, "csrc/a.cu", 12), gh);
  EXPECT_EQ(permalink("git@github.com:vllm-project/vllm.git", c, "csrc/a.cu", 12), gh);
  EXPECT_EQ(permalink("ssh://git@github.com:22/vllm-project/vllm.git", c, "csrc/a.cu", 12), gh);
  EXPECT_EQ(permalink("https://user:token@github.com/vllm-project/vllm.git", c, "csrc/a.cu", 12),
            gh);
  EXPECT_EQ(permalink("git@gitlab.com:group/sub/proj.git", c, "x.py", 3),
            "https://gitlab.com/group/sub/proj/-/blob/" + c + "/x.py#L3");
  EXPECT_EQ(permalink("https://bitbucket.org/team/proj.git", c, "x.py", 3),
            "https://bitbucket.org/team/proj/src/" + c + "/x.py#lines-3");
  EXPECT_EQ(permalink("/srv/mirrors/vllm.git", c, "x.py", 3), "");
  EXPECT_EQ(permalink("file:///srv/mirrors/vllm.git", c, "x.py", 3), "");
  EXPECT_EQ(permalink("https://git.example.org/vllm.git", c, "x.py", 3), "");  // layout unknown
  EXPECT_EQ(permalink("https://github.com/vllm-project/vllm.git", "", "x.py", 3), "");
}

TEST(KernelReferences, KernelKeyDropsKernelWordsAndNumbers) {
  EXPECT_EQ(kernel_key("csrc/layernorm_kernels.cu"), "layernorm");
  EXPECT_EQ(kernel_key("rms_norm_kernel"), "rms_norm");
  EXPECT_EQ(kernel_key("_fwd_kernel_0"), "fwd");
  EXPECT_EQ(kernel_key("paged_attention_v1_kernel"), "paged_attention_v1");
  EXPECT_EQ(kernel_key("MoeSortKernel"), "MoeSort");
  EXPECT_EQ(kernel_key("kernel"), "kernel");
}

TEST(KernelReferences, VllmCheckoutGetsPermalinkTestReferenceAndTritonCounterpart) {
  Repo repo("vllm");
  repo.write("csrc/layernorm_kernels.cu", kLayernormCu);
  repo.write("tests/kernels/core/test_layernorm.py", kLayernormTest);
  repo.write("tests/kernels/core/test_activation.py", "def test_silu():\n    pass\n");
  repo.write("tests/test_config.py", "def test_config():\n    pass\n");
  repo.write("vllm/model_executor/layers/triton_rms.py", kTritonRmsNorm);
  repo.git({"init", "-q"});
  repo.git({"add", "-A"});
  repo.git({"commit", "-q", "-m", "fixture"});
  repo.git({"remote", "add", "origin", "git@github.com:vllm-project/vllm.git"});
  std::string commit = repo.git({"rev-parse", "HEAD"});
  commit.resize(40);

  const SourceIndex index = SourceIndex::build({repo.root()}, 2);
  const ReferenceFinder finder(index);
  const KernelName kernel = parse_kernel_name(kRmsNormKernel);
  const SourceMatch match = index.find(kernel);
  ASSERT_EQ(match.confidence, Confidence::kExact) << match.note;
  KernelReferences refs = finder.find(kernel, match, "_C::rms_norm");

  EXPECT_EQ(refs.upstream_url, "https://github.com/vllm-project/vllm/blob/" + commit +
                                   "/csrc/layernorm_kernels.cu#L4");
  ASSERT_TRUE(refs.test);
  EXPECT_EQ(refs.test->file, "tests/kernels/core/test_layernorm.py");
  EXPECT_EQ(refs.test_cmd, "python -m pytest tests/kernels/core/test_layernorm.py -k rms_norm");
  ASSERT_TRUE(refs.baseline);
  EXPECT_EQ(refs.baseline->file, "tests/kernels/core/test_layernorm.py");
  EXPECT_EQ(refs.baseline->line, 4);
  EXPECT_EQ(refs.baseline_symbol, "ref_rms_norm");
  EXPECT_EQ(refs.baseline_kind, "eager_fn");
  ASSERT_TRUE(refs.triton);
  EXPECT_EQ(refs.triton->file, "vllm/model_executor/layers/triton_rms.py");
  EXPECT_EQ(refs.triton->line, 5);
  EXPECT_EQ(refs.triton_symbol, "_rms_norm_fwd_kernel");  // the shorter of the two names
  ASSERT_EQ(refs.notes.size(), 1u);
  EXPECT_NE(refs.notes[0].find("2 Triton kernels"), std::string::npos) << refs.notes[0];

  // The columns, with the repository written as its $VAR.
  const RepoVars vars = make_repo_vars({repo.root()});
  const std::string var = std::string(vars.var_for(index.repos().front()));
  const auto row = magpie_source_columns(kernel, match, vars, refs);
  EXPECT_EQ(row[4], refs.upstream_url);
  EXPECT_EQ(row[5], var + "/tests/kernels/core/test_layernorm.py");
  EXPECT_EQ(row[6],
            "cd " + var + " && python -m pytest tests/kernels/core/test_layernorm.py -k rms_norm");
  EXPECT_EQ(row[7], var + "/tests/kernels/core/test_layernorm.py:4");
  EXPECT_EQ(row[8], "ref_rms_norm");
  EXPECT_EQ(row[9], "eager_fn");
  EXPECT_EQ(row[10], var + "/vllm/model_executor/layers/triton_rms.py:5");
  EXPECT_EQ(row[11], "_rms_norm_fwd_kernel");

  // A local change: the link still shows the commit, and the notes say the file differs.
  repo.write("csrc/layernorm_kernels.cu", std::string("// edited\n") + kLayernormCu);
  const ReferenceFinder after_edit(index);
  refs = after_edit.find(kernel, match, "");
  EXPECT_NE(refs.upstream_url.find(commit), std::string::npos);
  ASSERT_FALSE(refs.notes.empty());
  EXPECT_NE(refs.notes[0].find("local changes"), std::string::npos) << refs.notes[0];
}

TEST(KernelReferences, RootInsideACheckoutLinksThePathFromTheTopOfTheRepository) {
  Repo repo("mono");
  repo.write("third_party/vllm/csrc/layernorm_kernels.cu", kLayernormCu);
  repo.git({"init", "-q"});
  repo.git({"add", "-A"});
  repo.git({"commit", "-q", "-m", "fixture"});
  repo.git({"remote", "add", "upstream", "https://gitlab.com/acme/mono.git"});  // no origin
  const SourceIndex index = SourceIndex::build({repo.root() / "third_party" / "vllm"}, 2);
  const ReferenceFinder finder(index);
  const KernelName kernel = parse_kernel_name(kRmsNormKernel);
  const KernelReferences refs = finder.find(kernel, index.find(kernel), "");
  EXPECT_NE(refs.upstream_url.find("https://gitlab.com/acme/mono/-/blob/"), std::string::npos)
      << refs.upstream_url;
  EXPECT_TRUE(refs.upstream_url.ends_with("/third_party/vllm/csrc/layernorm_kernels.cu#L4"))
      << refs.upstream_url;
  EXPECT_FALSE(refs.test);  // no test folder in this root
}

TEST(KernelReferences, AiterOpTestsPerftestWrapperAndNoGitNoLink) {
  Repo repo("aiter");
  repo.write("csrc/kernels/rmsnorm_kernels.cu",
             "template <typename T, int N>\n"
             "__global__ void rmsnorm_kernel(T* out, const T* in) {}\n");
  repo.write("op_tests/test_rmsnorm2d.py",
             "from aiter.test_common import perftest\n"  // 1
             "\n"                                        // 2
             "@perftest()\n"                             // 3
             "def run_torch(input, weight, eps):\n"      // 4
             "    return input\n"
             "\n"
             "def test_rmsnorm2d(m, n):\n"
             "    pass\n");
  repo.write("op_tests/test_gemm_a8w8.py", "def test_gemm():\n    pass\n");
  const SourceIndex index = SourceIndex::build({repo.root()}, 2);
  const ReferenceFinder finder(index);
  const KernelName kernel =
      parse_kernel_name("void rmsnorm_kernel<float, 8>(float*, float const*)");
  const SourceMatch match = index.find(kernel);
  ASSERT_EQ(match.confidence, Confidence::kExact) << match.note;
  const KernelReferences refs = finder.find(kernel, match, "aiter::rmsnorm2d_fwd");
  EXPECT_EQ(refs.upstream_url, "");  // not a git checkout
  EXPECT_TRUE(finder.provenance(index.repos().front()).commit.empty());
  ASSERT_TRUE(refs.test);
  EXPECT_EQ(refs.test->file, "op_tests/test_rmsnorm2d.py");
  EXPECT_EQ(refs.test_cmd, "python -m pytest op_tests/test_rmsnorm2d.py -k rmsnorm");
  ASSERT_TRUE(refs.baseline);
  EXPECT_EQ(refs.baseline->line, 4);
  EXPECT_EQ(refs.baseline_symbol, "run_torch");
  EXPECT_EQ(refs.baseline_kind, "perftest_wrapper");
  EXPECT_FALSE(refs.triton);
}

TEST(KernelReferences, TestFoundByContentWhenNoNameMatchesAndInlineReference) {
  Repo repo("content");
  repo.write("csrc/pos_encoding_kernels.cu",
             "__global__ void rotary_embedding_kernel(float* q) {}\n");
  repo.write("tests/kernels/test_rope.py",
             "from vllm import ops\n"
             "def test_rope():\n"
             "    def ref_rotate(x):\n"
             "        return x\n"
             "    ops.rotary_embedding(ref_rotate(1))\n");
  repo.write("tests/kernels/test_cache.py", "def test_cache():\n    pass\n");
  const SourceIndex index = SourceIndex::build({repo.root()}, 2);
  const ReferenceFinder finder(index);
  const KernelName kernel =
      parse_kernel_name("void vllm::rotary_embedding_kernel<float, true>(float*)");
  const KernelReferences refs = finder.find(kernel, index.find(kernel), "");
  ASSERT_TRUE(refs.test);
  EXPECT_EQ(refs.test->file, "tests/kernels/test_rope.py");
  EXPECT_EQ(refs.test_cmd,
            "python -m pytest tests/kernels/test_rope.py");  // no test named after it
  ASSERT_TRUE(refs.baseline);
  EXPECT_EQ(refs.baseline_symbol, "ref_rotate");
  EXPECT_EQ(refs.baseline_kind, "inline_in_test");  // defined inside the test: not importable
}

TEST(KernelReferences, InductorKernelGetsTheAtenOpsItFusedAndItsOwnTritonFile) {
  Repo cache("inductor");
  const std::string kernel_file =
      "import triton\nimport triton.language as tl\n\n@triton.jit\n"
      "def triton_poi_fused_gelu_0(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):\n    pass\n";
  cache.write("yo/cyokernel.py", kernel_file);
  cache.write(
      "np/cnpoutput.py",
      "async_compile = AsyncCompile()\n"                                                // 1
      "\n"                                                                              // 2
      "# kernel path: /tmp/cache/yo/cyokernel.py\n"                                     // 3
      "# Topologically Sorted Source Nodes: [input_2, x], Original ATen: [aten.gelu, "  // 4
      "aten.add, aten.gelu]\n"
      "# Source node to ATen node mapping:\n"
      "#   input_2 => add, erf, mul\n"
      "# Graph fragment:\n"
      "#   %mul : Tensor = call_function[target=torch.ops.aten.mul.Tensor](args = (%x, 0.5))\n"
      "triton_poi_fused_gelu_0 = async_compile.triton('triton_poi_fused_gelu_0', '''\n" +
          kernel_file + "''', device_str='cuda')\n");
  const SourceIndex index = SourceIndex::build({cache.root()}, 2);
  const ReferenceFinder finder(index);
  const KernelName kernel = parse_kernel_name("triton_poi_fused_gelu_0");
  const SourceMatch match = index.find(kernel);
  ASSERT_EQ(match.confidence, Confidence::kExact) << match.note;
  const KernelReferences refs = finder.find(kernel, match, "triton_poi_fused_gelu_0");
  ASSERT_TRUE(refs.baseline);
  EXPECT_EQ(refs.baseline->file, "np/cnpoutput.py");
  EXPECT_EQ(refs.baseline->line, 4);
  EXPECT_EQ(refs.baseline_symbol, "torch.ops.aten.gelu; torch.ops.aten.add");
  EXPECT_EQ(refs.baseline_kind, "eager_fn");
  ASSERT_TRUE(refs.triton);
  EXPECT_EQ(refs.triton->file, "yo/cyokernel.py");
  EXPECT_EQ(refs.triton->line, 5);
  EXPECT_EQ(refs.triton_symbol, "triton_poi_fused_gelu_0");
  EXPECT_FALSE(refs.test);
  EXPECT_EQ(refs.upstream_url, "");
}

TEST(KernelReferences, LibraryKernelFallsBackToTheLaunchingAtenOp) {
  Repo repo("lib");
  repo.write("csrc/other.cu", "__global__ void other_kernel(float* q) {}\n");
  const SourceIndex index = SourceIndex::build({repo.root()}, 2);
  const ReferenceFinder finder(index);
  const KernelName kernel = parse_kernel_name("nvjet_sm90_tst_64x16_64x16_2x1_v_bz_TNT");
  const SourceMatch match = index.find(kernel);
  EXPECT_EQ(match.confidence, Confidence::kLibraryOwned);
  KernelReferences refs = finder.find(kernel, match, "aten::mm");
  EXPECT_FALSE(refs.baseline);  // no file: the op itself is the reference
  EXPECT_EQ(refs.baseline_symbol, "torch.ops.aten.mm");
  EXPECT_EQ(refs.baseline_kind, "eager_fn");
  EXPECT_EQ(refs.upstream_url, "");
  refs = finder.find(kernel, match, "_C::custom_gemm");  // not an ATen op: no baseline
  EXPECT_EQ(refs.baseline_symbol, "");
  EXPECT_EQ(refs.baseline_kind, "");
}

}  // namespace
}  // namespace magpie::sources
