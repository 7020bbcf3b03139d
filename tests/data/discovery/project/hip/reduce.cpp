#include <hip/hip_runtime.h>

__global__ void
__attribute__((amdgpu_flat_work_group_size(1, 256)))
real_hip_reduce(const float* in, float* out) {
  out[0] = in[0];
}

void launch(const float* in, float* out) {
  hipLaunchKernelGGL(real_hip_reduce, dim3(1), dim3(64), 0, 0, in, out);
}
