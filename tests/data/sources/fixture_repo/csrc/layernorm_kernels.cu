// Normalisation kernels (fixture).
#include <cuda_runtime.h>

namespace vllm {

template <typename scalar_t,
          int kVecSize>
__global__ void
__launch_bounds__(1024)
rms_norm_kernel(scalar_t* __restrict__ out,
                const scalar_t* __restrict__ input,
                float epsilon) {
  out[threadIdx.x] = input[threadIdx.x] * epsilon;
}

__global__ void fused_add_rms_norm_kernel(float* out, const float* residual) {
  out[threadIdx.x] += residual[threadIdx.x];
}

// Declared here, defined in activation_kernels.cu: not a second definition.
__global__ void silu_and_mul_kernel(float* out, const float* input, int d);

}  // namespace vllm

void launch_rms_norm(float* out, const float* in, float eps, cudaStream_t stream) {
  vllm::rms_norm_kernel<float, 4><<<dim3(1), dim3(256), 0, stream>>>(out, in, eps);
  macro_defined_kernel<<<1, 1>>>(out);
}
