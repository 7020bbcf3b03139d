// Activation kernels (fixture).
namespace vllm {

__global__ void silu_and_mul_kernel(float* out, const float* input, int d) {
  out[threadIdx.x] = input[threadIdx.x] * input[threadIdx.x + d];
}

}  // namespace vllm
