#include "kernel/kernel_config_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernel/command.hpp"
#include "kernel/kernel_config.hpp"

namespace magpie::kernel {
namespace {

namespace fs = std::filesystem;

// Variables stay unexpanded, so a command reads back exactly as written.
const VarLookup kNoVars = [](const std::string&) -> std::optional<std::string> {
  return std::nullopt;
};

class KernelConfigWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("magpie_writer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "src");
    std::ofstream(dir_ / "src/gemm.hip") << "__global__ void gemm() {}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // draft → file → load_kernel_config, as `magpie analyze -k FILE` reads it.
  KernelConfig round_trip(const KernelConfigDraft& d) {
    const fs::path file = dir_ / "configs/kernel.yaml";  // elsewhere than the kernel on purpose
    fs::create_directories(file.parent_path());
    std::ofstream(file) << d.config_content;
    return load_kernel_config(file, kNoVars);
  }

  KernelConfigDraftRequest request() {
    KernelConfigDraftRequest r;
    r.kernel_id = "gemm_v2";
    r.kernel_path = (dir_ / "src/gemm.hip").string();
    r.testcase_command = "python3 test_gemm.py --m 128";
    return r;
  }

  fs::path dir_;
};

TEST_F(KernelConfigWriter, RoundTripsThroughTheLoader) {
  auto req = request();
  req.kernel_type = "HIP";
  req.compile_command = "hipcc -O3 --offload-arch=gfx942 -o gemm gemm.hip";
  auto draft = draft_kernel_config(req);
  EXPECT_TRUE(draft.warnings.empty()) << draft.warnings.front();
  auto cfg = round_trip(draft);
  ASSERT_EQ(cfg.kernels.size(), 1u);
  const auto& k = cfg.kernels[0];
  EXPECT_EQ(k.id, "gemm_v2");
  EXPECT_EQ(k.type, KernelType::kHip);
  EXPECT_EQ(k.source_files, std::vector<fs::path>{dir_ / "src/gemm.hip"});
  EXPECT_EQ(k.working_dir, dir_ / "src");  // the kernel's folder by default, not the YAML's
  EXPECT_EQ(k.testcase_command, (CommandList{{"python3", "test_gemm.py", "--m", "128"}}));
  EXPECT_EQ(k.compile_command, (CommandList{split_command(req.compile_command)}));
  EXPECT_TRUE(cfg.warnings.empty()) << cfg.warnings.front();
  EXPECT_NE(draft.config_content.find("kernel:"), std::string::npos);
}

TEST_F(KernelConfigWriter, CommandsWithQuotesColonsAndHashesSurvive) {
  const std::vector<std::string> commands{
      R"cmd(python3 -c "import sys; print('a: b')")cmd",
      R"cmd(bash -c 'echo "x # y" && ./run --flag=a:b')cmd",
      R"cmd(./run --json '{"k": [1, 2]}' --path "C:\dir\f.txt")cmd",
      "- ./starts-with-dash * & ! % @ `tick`",
      "./k --name 'with  two  spaces' $HOME ${CUDA_HOME}/bin",
      "./unicode --label ünïcødé→",
  };
  for (const auto& cmd : commands) {
    auto req = request();
    req.testcase_command = cmd;
    req.compile_command = cmd;
    auto cfg = round_trip(draft_kernel_config(req));
    ASSERT_EQ(cfg.kernels.size(), 1u) << cmd;
    EXPECT_EQ(cfg.kernels[0].testcase_command, (CommandList{split_command(cmd)})) << cmd;
    EXPECT_EQ(cfg.kernels[0].compile_command, (CommandList{split_command(cmd)})) << cmd;
  }
}

TEST_F(KernelConfigWriter, PathsWithSpacesAndAnExplicitWorkingDir) {
  fs::create_directories(dir_ / "my kernels: v1");
  std::ofstream(dir_ / "my kernels: v1/k #1.cu") << "";
  auto req = request();
  req.kernel_type = "cuda";
  req.kernel_path = (dir_ / "my kernels: v1/k #1.cu").string();
  req.working_dir = dir_.string();
  auto cfg = round_trip(draft_kernel_config(req));
  EXPECT_EQ(cfg.kernels[0].type, KernelType::kCuda);
  EXPECT_EQ(cfg.kernels[0].source_files.at(0), dir_ / "my kernels: v1/k #1.cu");
  EXPECT_EQ(cfg.kernels[0].working_dir, dir_);
}

TEST_F(KernelConfigWriter, EveryTypeAndAliasWritesTheCanonicalName) {
  for (auto [in, out] :
       std::vector<std::pair<std::string, KernelType>>{{"hip", KernelType::kHip},
                                                       {"Cuda", KernelType::kCuda},
                                                       {"torch", KernelType::kPytorch},
                                                       {"py", KernelType::kPytorch},
                                                       {"triton", KernelType::kTriton}}) {
    auto req = request();
    req.kernel_type = in;
    auto draft = draft_kernel_config(req);
    EXPECT_EQ(round_trip(draft).kernels[0].type, out) << in;
    EXPECT_NE(draft.config_content.find(std::string("type: ") + to_string(out)), std::string::npos)
        << in;
  }
}

TEST_F(KernelConfigWriter, UnknownTypeNamesTheAllowedValues) {
  auto req = request();
  req.kernel_type = "opencl";
  try {
    draft_kernel_config(req);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    const std::string what = e.what();
    for (const char* v : {"opencl", "hip", "cuda", "pytorch", "triton"}) {
      EXPECT_NE(what.find(v), std::string::npos) << what;
    }
  }
}

TEST_F(KernelConfigWriter, RequiredFieldsAndSafeIds) {
  for (auto mutate : std::vector<void (*)(KernelConfigDraftRequest&)>{
           [](KernelConfigDraftRequest& r) { r.kernel_id = ""; },
           [](KernelConfigDraftRequest& r) { r.kernel_id = "../escape"; },
           [](KernelConfigDraftRequest& r) { r.kernel_id = "a/b"; },
           [](KernelConfigDraftRequest& r) { r.kernel_id = ".."; },
           [](KernelConfigDraftRequest& r) { r.kernel_path = "  "; },
           [](KernelConfigDraftRequest& r) { r.testcase_command = ""; },
       }) {
    auto req = request();
    mutate(req);
    try {
      draft_kernel_config(req);
      ADD_FAILURE() << "no error for id='" << req.kernel_id << "' path='" << req.kernel_path << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    }
  }
}

TEST_F(KernelConfigWriter, UsageNamesTheConfigFile) {
  auto req = request();
  EXPECT_EQ(draft_kernel_config(req).usage, "magpie analyze -k gemm_v2.yaml");
  req.config_path = "/tmp/my configs/gemm.yaml";
  auto draft = draft_kernel_config(req);
  EXPECT_EQ(draft.usage, "magpie analyze -k '/tmp/my configs/gemm.yaml'");
  EXPECT_NE(draft.config_content.find(draft.usage),
            std::string::npos);  // also in the header comment
}

TEST_F(KernelConfigWriter, WarnsAboutShellSyntaxMissingFilesAndRelativePaths) {
  auto req = request();
  req.testcase_command = "make test && ./run | tee log";
  auto d = draft_kernel_config(req);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("'&&'"), std::string::npos) << d.warnings[0];
  EXPECT_NE(d.warnings[0].find("bash -c"), std::string::npos) << d.warnings[0];

  req = request();
  req.kernel_path = (dir_ / "src/missing.cu").string();
  d = draft_kernel_config(req);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("does not exist"), std::string::npos) << d.warnings[0];

  req = request();
  req.kernel_path = "relative/k.hip";
  d = draft_kernel_config(req);
  auto cfg = round_trip(d);
  EXPECT_EQ(cfg.kernels[0].source_files.at(0),
            (fs::current_path() / "relative/k.hip").lexically_normal());
  EXPECT_NE(d.warnings.at(0).find("relative"), std::string::npos) << d.warnings[0];

  req = request();
  req.kernel_type = "triton";
  req.compile_command = "python3 setup.py build";
  d = draft_kernel_config(req);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("triton"), std::string::npos) << d.warnings[0];
}

}  // namespace
}  // namespace magpie::kernel
