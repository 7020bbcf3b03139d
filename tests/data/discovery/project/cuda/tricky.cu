// Tricky CUDA declarations: each kernel that counts is named real_*.
#include <cuda_runtime.h>
#include <cstdio>

#define KERNEL_ENTRY extern "C" __global__
#define DECLARE_KERNEL(name) __global__ void name(float* p)
#define MY_ATTR(n) __attribute__((aligned(n)))

namespace ops {
__global__ void real_in_namespace(float* x) { x[0] = 1.f; }
}  // namespace ops

__global__ void real_plain(const float* __restrict__ a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}

template <typename T, int kBlock = 256>
__global__ void __launch_bounds__(kBlock, 2)
real_templated(const T* in,
               T* out,
               size_t n)
{
  const char* msg = "__global__ void fake_in_string(int) {}";
  (void)msg;
  char c = '"';
  (void)c;
}

extern "C" __global__ void real_extern_c(int* flag) { *flag = 1'000'000; }

KERNEL_ENTRY void real_via_macro(int* flag) { *flag = 2; }

__global__ MY_ATTR(16) void real_after_macro(double* d) { d[0] = 0; }

template <>
__global__ void real_templated<float, 128>(const float* in, float* out, size_t n) {}

__global__ void declared_only(float* p);  // a declaration is not a definition

// __global__ void fake_line_comment(int* p) {}
/*
__global__ void fake_block_comment(int* p) {}
*/
#if 0
__global__ void fake_if_zero(int* p) {}
#else
__global__ void real_else_branch(int* p) {}
#endif

static const char* kRaw = R"cuda(
__global__ void fake_raw_string(int* p) {}
)cuda";

__device__ float not_a_kernel(float x) { return x * 2; }

__global__ void real_trailing_macro(int* p) __noinline__ {}

void host_launch(float* d) {
  real_plain<<<1, 32>>>(d, d, 1);
  cudaDeviceSynchronize();
}
