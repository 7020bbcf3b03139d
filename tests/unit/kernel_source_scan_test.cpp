#include "kernel/kernel_source_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace magpie::kernel {
namespace {

std::vector<std::string> names(const std::vector<ScannedKernel>& ks) {
  std::vector<std::string> out;
  for (const auto& k : ks) out.push_back(k.name);
  return out;
}

TEST(KernelSourceScan, BlankingKeepsOffsetsAndLines) {
  const std::string src = "a /* x\ny */ b // c\n\"s\\\"t\" 'q' R\"d(\n)\")d\" 1'000";
  const std::string out = blank_c_comments(src, true);
  ASSERT_EQ(out.size(), src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\n') {
      EXPECT_EQ(out[i], '\n') << i;
    }
  }
  EXPECT_EQ(out.find('x'), std::string::npos);
  EXPECT_EQ(out.find('c'), std::string::npos);
  EXPECT_EQ(out.find('s'), std::string::npos);
  EXPECT_EQ(out.find('q'), std::string::npos);
  EXPECT_EQ(out.find('d'), std::string::npos);      // the raw string, up to its own )d"
  EXPECT_NE(out.find("1'000"), std::string::npos);  // a digit separator is not a char literal
  EXPECT_NE(out.find('a'), std::string::npos);
  EXPECT_NE(out.find('b'), std::string::npos);
  // Strings kept when asked (the preprocessor reads #include "...").
  EXPECT_NE(blank_c_comments("#include \"hip/hip_runtime.h\"", false).find("hip/"),
            std::string::npos);
}

TEST(KernelSourceScan, PythonBlankingCoversTripleQuotesAndEscapes) {
  const std::string src = "x = '''a\n@triton.jit'''  # c\ny = \"q\\\"w\" + 'e'\n";
  const std::string out = blank_python_comments_and_strings(src);
  ASSERT_EQ(out.size(), src.size());
  EXPECT_EQ(out.find("triton"), std::string::npos);
  EXPECT_EQ(out.find('w'), std::string::npos);
  EXPECT_EQ(out.find('e'), std::string::npos);
  EXPECT_NE(out.find("y ="), std::string::npos);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
}

TEST(KernelSourceScan, VendorMarkers) {
  EXPECT_TRUE(scan_c_source("#include <hip/hip_runtime.h>\n").hip_markers);
  EXPECT_TRUE(scan_c_source("void f() { hipLaunchKernelGGL(k, 1, 1, 0, 0); }").hip_markers);
  EXPECT_FALSE(scan_c_source("// hipMalloc in a comment\nvoid f();").hip_markers);
  EXPECT_TRUE(scan_c_source("#include \"cuda_runtime.h\"\n").cuda_markers);
  EXPECT_TRUE(scan_c_source("void f() { cudaMalloc(nullptr, 0); }").cuda_markers);
  EXPECT_FALSE(scan_c_source("int cudaless = 0;").cuda_markers);  // no upper case after the prefix
  auto none = scan_c_source("__global__ void k(int* p) {}");
  EXPECT_FALSE(none.hip_markers || none.cuda_markers);
  EXPECT_EQ(names(none.kernels), std::vector<std::string>{"k"});
}

TEST(KernelSourceScan, NestedIfZeroAndItsElse) {
  const char* src =
      "#if 0\n"
      "#ifdef X\n__global__ void dead1() {}\n#else\n__global__ void dead2() {}\n#endif\n"
      "__global__ void dead3() {}\n"
      "#elif defined(Y)\n__global__ void live_elif() {}\n"
      "#endif\n"
      "#ifdef Z\n__global__ void live_ifdef() {}\n#endif\n";
  EXPECT_EQ(names(scan_c_source(src).kernels),
            (std::vector<std::string>{"live_elif", "live_ifdef"}));
}

TEST(KernelSourceScan, DeclarationsAndInstantiationsAreNotDefinitions) {
  const char* src =
      "template <class T> __global__ void k(T* p);\n"
      "template __global__ void k<float>(float* p);\n"
      "template <class T> __global__ void k(T* p) { }\n";
  auto scan = scan_c_source(src);
  ASSERT_EQ(scan.kernels.size(), 1u);
  EXPECT_EQ(scan.kernels[0].line, 3);
}

TEST(KernelSourceScan, ReturnTypesWithTemplatesAndAttributes) {
  const char* src =
      "template <class T>\n"
      "__global__ typename std::enable_if<(sizeof(T) > 2), void>::type wide(T* p) {}\n"
      "__global__ void [[maybe_unused]] attr_kernel(int* p) {}\n"
      "__global__ auto trailing(int* p) -> void {}\n";
  EXPECT_EQ(names(scan_c_source(src).kernels),
            (std::vector<std::string>{"wide", "attr_kernel", "trailing"}));
}

TEST(KernelSourceScan, DecoratorChainsResetOnOtherStatements) {
  const char* src =
      "import triton\n"
      "@triton.jit\n"
      "x = 1\n"
      "def not_decorated(a):\n"
      "    pass\n"
      "@triton.autotune(configs=[], key=[])\n"
      "def autotune_without_jit(a):\n"
      "    pass\n";
  EXPECT_TRUE(scan_python_source(src).triton.empty());
}

TEST(KernelSourceScan, ModulesWithKeywordsAndOtherFrameworks) {
  const char* src =
      "from torch import nn as tnn\n"
      "import torch as T\n"
      "class A(tnn.Module, metaclass=Meta):\n    pass\n"
      "class B(T.nn.Module):\n    pass\n"
      "class C(keras.Model):\n    pass\n"
      "class D(Module):\n    pass\n";  // a bare Module not imported from torch.nn
  EXPECT_EQ(names(scan_python_source(src).modules), (std::vector<std::string>{"A", "B"}));
}

TEST(KernelSourceScan, NamespacesQualifyTheName) {
  const char* src =
      "namespace a { namespace b::c {\n__global__ void k1() {}\n}\n"
      "namespace {\n__global__ void k2() {}\n}\n"
      "inline namespace v1 { __global__ void k3() {} }\n"
      "__global__ void k4() {}\n}\n"
      "namespace alias = a::b;\n"
      "__global__ void a::k5() {}\n";
  EXPECT_EQ(names(scan_c_source(src).kernels),
            (std::vector<std::string>{"a::b::c::k1", "a::k2", "a::v1::k3", "a::k4", "a::k5"}));
}

}  // namespace
}  // namespace magpie::kernel
