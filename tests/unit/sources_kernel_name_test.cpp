// Kernel-name normalisation and classification on names taken from the
// shared H100/H200/MI300 traces (tests/../shared/traces) and rocprofv3 output.
#include <gtest/gtest.h>

#include <string>

#include "sources/demangle.hpp"
#include "sources/kernel_name.hpp"

namespace magpie::sources {
namespace {

struct NameCase {
  std::string raw;
  KernelFamily family;
  KernelCategory category;
  std::string normalized;
  std::string search_symbol;
  bool library_owned;
  std::string magpie_kind;
  std::string magpie_category;
};

void PrintTo(const NameCase& c, std::ostream* os) { *os << c.raw.substr(0, 80); }

class KernelNameTableTest : public ::testing::TestWithParam<NameCase> {};

TEST_P(KernelNameTableTest, ParsesRealTraceName) {
  const NameCase& c = GetParam();
  const KernelName k = parse_kernel_name(c.raw);
  EXPECT_EQ(k.raw, c.raw);
  EXPECT_EQ(to_string(k.family), to_string(c.family));
  EXPECT_EQ(to_string(k.category), to_string(c.category));
  EXPECT_EQ(k.normalized, c.normalized);
  EXPECT_EQ(k.search_symbol, c.search_symbol);
  EXPECT_EQ(k.library_owned, c.library_owned);
  EXPECT_EQ(k.magpie_kind, c.magpie_kind);
  EXPECT_EQ(k.magpie_category, c.magpie_category);
}

using F = KernelFamily;
using C = KernelCategory;

// clang-format off
INSTANTIATE_TEST_SUITE_P(KernelNames, KernelNameTableTest, ::testing::Values(
  // H200 / H100 Kineto (demangled by the profiler).
  NameCase{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, std::array<char*, 1ul> >(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)",
           F::kAtenNative, C::kElementwise, "at::native::vectorized_elementwise_kernel", "vectorized_elementwise_kernel", true, "aten_native", "elementwise"},
  NameCase{"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})",
           F::kAtenNative, C::kElementwise, "at::native::elementwise_kernel", "elementwise_kernel", true, "aten_native", "copy"},
  NameCase{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
           F::kAtenNative, C::kReduction, "at::native::reduce_kernel", "reduce_kernel", true, "aten_native", "reduce"},
  NameCase{"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
           F::kAtenNative, C::kNormalization, "at::native::vectorized_layer_norm_kernel", "vectorized_layer_norm_kernel", true, "aten_native", "layernorm"},
  NameCase{"void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, long)",
           F::kAtenNative, C::kOther, "at::native::indexSelectSmallIndex", "indexSelectSmallIndex", true, "aten_native", "indexing"},
  NameCase{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
           F::kCublas, C::kGemm, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
           "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", true, "unknown", "gemm"},
  NameCase{"nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT",
           F::kCublas, C::kGemm, "nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT", "nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT", true, "unknown", "gemm"},
  NameCase{"void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false, float, __nv_bfloat16, __nv_bfloat16, true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, float*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*, float*, float*, float const*, float const*, float const*, float const*, float const*)",
           F::kCublas, C::kGemm, "cublasLt::splitKreduce_kernel", "splitKreduce_kernel", true, "unknown", "gemm"},
  NameCase{"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>(cutlass_80_simt_sgemm_128x32_8x5_tn_align1::Params)",
           F::kCutlass, C::kGemm, "cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>", "cutlass_80_simt_sgemm_128x32_8x5_tn_align1", true, "hip_cpp", "gemm"},
  NameCase{"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0",
           F::kCudnn, C::kAttention, "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0",
           "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0", true, "unknown", "attention"},
  NameCase{"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)",
           F::kFlashAttention, C::kAttention, "pytorch_flash::flash_fwd_kernel", "flash_fwd_kernel", true, "hip_cpp", "attention"},
  NameCase{"Memcpy DtoD (Device -> Device)", F::kMemcpy, C::kMemory, "Memcpy DtoD", "", true, "unknown", "blit"},
  NameCase{"Memset (Device)", F::kMemcpy, C::kMemory, "Memset", "", true, "unknown", "blit"},
  // MI300 Kineto: ROCm libraries, vLLM/SGLang HIP kernels, Triton.
  NameCase{"Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT1x4x256_SN_LDSB0_AFC0_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA950_IU4_K1_LDSTI0_LBSPPA0_LBSPPB0_LBSPPM0_LPA8_LPB8_LPM0_LRVW8_LWPMn1_MIAV0_MO40_NTn1_NTA0_NTB4_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB4_ONLL1_PGR2_PLR1_PKA1_SIA1_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKFTR0_SKXCCM0_TT1_1_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGRO1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG1_4_16",
           F::kTensile, C::kGemm,
           "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT1x4x256_SN_LDSB0_AFC0_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA950_IU4_K1_LDSTI0_LBSPPA0_LBSPPB0_LBSPPM0_LPA8_LPB8_LPM0_LRVW8_LWPMn1_MIAV0_MO40_NTn1_NTA0_NTB4_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB4_ONLL1_PGR2_PLR1_PKA1_SIA1_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKFTR0_SKXCCM0_TT1_1_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGRO1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG1_4_16",
           "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT1x4x256_SN_LDSB0_AFC0_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA950_IU4_K1_LDSTI0_LBSPPA0_LBSPPB0_LBSPPM0_LPA8_LPB8_LPM0_LRVW8_LWPMn1_MIAV0_MO40_NTn1_NTA0_NTB4_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB4_ONLL1_PGR2_PLR1_PKA1_SIA1_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKFTR0_SKXCCM0_TT1_1_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGRO1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG1_4_16",
           true, "tensile_gemm", "gemm"},
  NameCase{"_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnorm2dFwdPipelineProblemIDF16bDF16bfDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequenceIJLi1ELi3072EEEENS5_IJLi1ELi128EEEENS5_IJLi1ELi8EEEEEENS_18Rmsnorm2dFwdTraitsILb1ELb0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE1ELNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rmsnorm2dSensitiveEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefaultPolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb0ELb1ELb0EEEvEEEEJNSM_5KargsEEEEvDpT1_",
           F::kCk, C::kNormalization, "ck_tile::kentry<ck_tile::Rmsnorm2dFwd>", "Rmsnorm2dFwd", true, "ck_tile", "layernorm"},
  NameCase{"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
           F::kAiter, C::kNormalization, "aiter::add_rmsnorm_quant_kernel", "add_rmsnorm_quant_kernel", true, "aiter", "layernorm"},
  NameCase{"_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
           F::kUserCuda, C::kElementwise, "sgl_hip::activation::act_and_mul_kernel", "act_and_mul_kernel", false, "hip_cpp", "elementwise"},
  NameCase{"void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*, long, long, long, long, long, int, int, int, float const*, float const*, int)",
           F::kUserCuda, C::kOther, "vllm::reshape_and_cache_flash_kernel", "reshape_and_cache_flash_kernel", false, "hip_cpp", "kv_cache"},
  NameCase{"void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int const*, int, int, float const*)",
           F::kUserCuda, C::kAttention, "paged_attention_ll4mi_reduce_kernel", "paged_attention_ll4mi_reduce_kernel", false, "hip_cpp", "attention"},
  NameCase{"void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)",
           F::kUserCuda, C::kOther, "store_kvcache", "store_kvcache", false, "hip_cpp", "kv_cache"},
  NameCase{"triton_poi_fused__to_copy_1", F::kInductor, C::kElementwise, "triton_poi_fused__to_copy_1", "triton_poi_fused__to_copy_1", false, "inductor", "copy"},
  NameCase{"triton_red_fused_add_mean_mul_pow_rsqrt_0", F::kInductor, C::kReduction, "triton_red_fused_add_mean_mul_pow_rsqrt_0", "triton_red_fused_add_mean_mul_pow_rsqrt_0", false, "inductor", "reduce"},
  NameCase{"_topk_forward", F::kTriton, C::kOther, "_topk_forward", "_topk_forward", false, "triton_jit", "router"},
  NameCase{"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", F::kTriton, C::kGemm, "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", false, "triton_jit", "moe_gemm"},
  NameCase{"kernel_unified_attention_2d", F::kTriton, C::kAttention, "kernel_unified_attention_2d", "kernel_unified_attention_2d", false, "triton_jit", "attention"},
  // rocprofv3: mangled, with the ".kd" descriptor suffix.
  NameCase{"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_.kd",
           F::kAtenNative, C::kReduction, "at::native::reduce_kernel", "reduce_kernel", true, "aten_native", "reduce"},
  NameCase{"_Z23ncclDevKernel_Generic_124ncclDevKernelArgsStorageILm4096EE.kd",
           F::kNccl, C::kCommunication, "ncclDevKernel_Generic_1", "ncclDevKernel_Generic_1", true, "unknown", ""},
  NameCase{"__amd_rocclr_copyBuffer.kd", F::kMemcpy, C::kMemory, "__amd_rocclr_copyBuffer", "__amd_rocclr_copyBuffer", true, "unknown", "blit"},
  NameCase{"attn_fwd.kd", F::kTriton, C::kAttention, "attn_fwd", "attn_fwd", false, "triton_jit", "attention"},
  NameCase{"_ZN7rocprim17ROCPRIM_400001_NS6detail16transform_kernelILb1ENS1_24wrapped_transform_configINS0_14default_configEmLb1EEEmPmPlNS0_8identityIvEEEEvT2_mT3_T4_.kd",
           F::kUnknown, C::kOther, "rocprim::detail::transform_kernel", "transform_kernel", true, "unknown", ""}
));
// clang-format on

TEST(KernelNameTest, CategoryAndFamilyStrings) {
  EXPECT_EQ(to_string(KernelCategory::kGemm), "GEMM");
  EXPECT_EQ(to_string(KernelCategory::kAttention), "attention");
  EXPECT_EQ(to_string(KernelCategory::kNormalization), "normalization");
  EXPECT_EQ(to_string(KernelCategory::kElementwise), "elementwise");
  EXPECT_EQ(to_string(KernelCategory::kReduction), "reduction");
  EXPECT_EQ(to_string(KernelCategory::kCommunication), "communication");
  EXPECT_EQ(to_string(KernelCategory::kMemory), "memcpy/memset");
  EXPECT_EQ(to_string(KernelCategory::kOther), "other");
  EXPECT_EQ(to_string(KernelFamily::kFlashAttention), "flash_attention");
}

TEST(KernelNameTest, DemangledFieldKeepsTheFullSignature) {
  const KernelName k = parse_kernel_name(
      "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_."
      "kd");
  EXPECT_EQ(k.demangled,
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
            "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> "
            ">(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
            "unsigned int, float, 4, 4>)");
  const KernelName plain = parse_kernel_name("nvjet_sm90_tst_64x16_64x16_2x1_v_bz_TNT");
  EXPECT_EQ(plain.demangled, plain.raw);
}

TEST(KernelNameTest, LambdaFunctorsDoNotLeakIntoTheName) {
  const KernelName k = parse_kernel_name(
      "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
      "namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, "
      "float)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous "
      "namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, "
      "float)::{lambda(float)#1}, std::array<char*, 2ul>)");
  EXPECT_EQ(k.normalized, "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(k.category, KernelCategory::kElementwise);
}

TEST(KernelNameTest, WrapperKernelsAreNamedAfterTheWrappedType) {
  const KernelName fa3 = parse_kernel_name(
      "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
      "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
      "false> > > >(flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<int> >::Params)");
  EXPECT_EQ(fa3.normalized, "cutlass::device_kernel<flash::FlashAttnFwdSm90>");
  EXPECT_EQ(fa3.search_symbol, "FlashAttnFwdSm90");
  EXPECT_EQ(fa3.family, KernelFamily::kFlashAttention);
  EXPECT_EQ(fa3.category, KernelCategory::kAttention);
}

TEST(KernelNameTest, TritonSpecialisationSuffixIsDropped) {
  const KernelName k = parse_kernel_name("_fwd_kernel_0d1d2d3d4d5d6d7d8d9c10c");
  EXPECT_EQ(k.family, KernelFamily::kTriton);
  EXPECT_EQ(k.normalized, "_fwd_kernel_0d1d2d3d4d5d6d7d8d9c10c");
  EXPECT_EQ(k.search_symbol, "_fwd_kernel");
  // A plain numeric suffix is part of the name; the index treats it as partial.
  EXPECT_EQ(parse_kernel_name("_fwd_kernel_0").search_symbol, "_fwd_kernel_0");
  EXPECT_EQ(parse_kernel_name("kernel_unified_attention_3d").search_symbol,
            "kernel_unified_attention_3d");
}

TEST(KernelNameTest, NvidiaLibraryAndCommunicationNames) {
  const KernelName nccl = parse_kernel_name(
      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(nccl.family, KernelFamily::kNccl);
  EXPECT_EQ(nccl.normalized, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(nccl.category, KernelCategory::kCommunication);
  const KernelName sgemm = parse_kernel_name("ampere_sgemm_128x64_tn");
  EXPECT_EQ(sgemm.family, KernelFamily::kCublas);
  EXPECT_EQ(sgemm.category, KernelCategory::kGemm);
  const KernelName conv = parse_kernel_name(
      "sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_f16f16_f16f32_f32_nhwckrsc_nhwc_"
      "tilesize128x16x64_stage4_warpsize4x1x1_g1_tensor16x8x16_alignc4_execute_kernel__5x_cudnn");
  EXPECT_EQ(conv.family, KernelFamily::kCudnn);
  const KernelName ar = parse_kernel_name(
      "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, "
      "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)");
  EXPECT_EQ(ar.family, KernelFamily::kUserCuda);
  EXPECT_EQ(ar.category, KernelCategory::kCommunication);
}

// cuDNN convolution engines are matrix work whatever their name says (issue 26,
// item 9): before, only the xmma implicit-GEMM ones were GEMM and the fprop /
// dgrad / wgrad engines were "other". Its layout transforms are copies.
TEST(KernelClassifier, CudnnConvolutionKernelsAreGemm) {
  for (const char* name : {
           "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 8, 3, 3, 5, false, 512>(int, int, "
           "int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, "
           "int, float, int, int, int, int)",
           "void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int, int, "
           "float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, "
           "int, unsigned long long, int, float, int, int, int)",
           "void cudnn::detail::dgrad2d_grouped_direct_kernel<float, float, float, float, true, "
           "false, 0, 0, 0>(cudnnTensorStruct, float const*, cudnnFilterStruct, float const*, "
           "cudnnConvolutionStruct, cudnnTensorStruct, float*, float, float, cudnn::reduced_divisor)",
           "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_"
           "nhwc_align4>(cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_nhwc_align4::Params)",
           "cudnn_infer_ampere_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
           // Recorded on an H100 under autocast (tests/data/autocast).
           "sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x"
           "64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
       }) {
    const KernelName k = parse_kernel_name(name);
    EXPECT_EQ(k.family, KernelFamily::kCudnn) << name;
    EXPECT_EQ(k.category, KernelCategory::kGemm) << name;
  }
  const KernelName layout = parse_kernel_name(
      "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, "
      "false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, "
      "__nv_bfloat16 const*, __nv_bfloat16*)");
  EXPECT_EQ(layout.family, KernelFamily::kCudnn);
  EXPECT_EQ(layout.category, KernelCategory::kElementwise);
  // cuDNN's fused attention stays attention.
  EXPECT_EQ(parse_kernel_name("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_"
                              "16x128x128_1x4x1_cga1x1x1_kernel0_0")
                .category,
            KernelCategory::kAttention);
}

TEST(KernelNameTest, AnnotationKind) {
  EXPECT_EQ(parse_kernel_name("execute_context_0_generation_1").magpie_kind, "annotation");
}

TEST(KernelDemangleTest, PlainNamesAreNotMangled) {
  EXPECT_FALSE(demangle("attn_fwd").has_value());
  EXPECT_FALSE(demangle("Memcpy HtoD (Pageable -> Device)").has_value());
  EXPECT_EQ(strip_kernel_descriptor_suffix("__amd_rocclr_fillBufferAligned.kd"),
            "__amd_rocclr_fillBufferAligned");
  EXPECT_EQ(strip_kernel_descriptor_suffix("attn_fwd"), "attn_fwd");
}

TEST(KernelDemangleTest, BFloat16IsDemangledDespiteTheOldDemangler) {
  auto out = demangle(
      "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_"
      "S4_diiiiiiib");
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out,
            "void aiter::add_rmsnorm_quant_kernel<__bf16, __bf16, 64, 8, false, false, true, "
            "1>(__bf16*, __bf16*, float*, __bf16*, __bf16*, __bf16*, double, int, int, int, int, "
            "int, int, int, bool)");
}

TEST(KernelDemangleTest, UnknownEncodingsFallBackToTheQualifiedName) {
  auto out = demangle(
      "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_"
      "S5_EEEEvPS3_PS4_i");
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, "sgl_hip::activation::act_and_mul_kernel");
  auto anon = demangle("_ZN12_GLOBAL__N_13fooEv");
  ASSERT_TRUE(anon.has_value());
  EXPECT_EQ(*anon, "(anonymous namespace)::foo()");
  // The fallback drops the anonymous namespace too.
  auto anon_new = demangle("_ZN4vllm12_GLOBAL__N_13fooITnPFivEXadL_Z3barvEEEEvv");
  ASSERT_TRUE(anon_new.has_value());
  EXPECT_EQ(*anon_new, "vllm::foo");
}

}  // namespace
}  // namespace magpie::sources
