// A hipified source that kept its .cu name: HIP headers and calls, no CUDA ones.
#include "hip/hip_runtime.h"

__global__ void real_hipified(float* p) { p[0] = 0; }

void run(float* p) { hipLaunchKernelGGL(real_hipified, dim3(1), dim3(1), 0, 0, p); }
