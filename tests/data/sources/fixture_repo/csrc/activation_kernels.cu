// Activation kernels (fixture).
namespace vllm {

__global__ void silu_and_mul_kernel(float* out, const float* input, int d) {
  out[threadIdx.x] = input[threadIdx.x] * input[threadIdx.x + d];
}

}  // namespace vllm

// Launch bounds through a macro between __global__ and the name, as in ATen.
__global__ void C10_LAUNCH_BOUNDS_1(256) gelu_kernel(float* out) { out[0] = 1.f; }
