#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(256) real_hip_saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
