// HIP build of the scaling kernel (fixture).
#include <hip/hip_runtime.h>

template <typename T>
__global__ __launch_bounds__(256) void scaled_quant_kernel(T* out, const float* in,
                                                           float scale) {
  out[threadIdx.x] = static_cast<T>(in[threadIdx.x] * scale);
}
