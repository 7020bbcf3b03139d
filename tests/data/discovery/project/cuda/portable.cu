// Portable code: CUDA and HIP branches; a .cu with CUDA markers stays CUDA.
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

__global__ void real_portable(float* p) { p[0] = 0; }
