// One thread per output element, reading A and B straight from global memory.
#include "matmul_check.cuh"

__global__ void matmul_naive(const float* a, const float* b, float* c, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float acc = 0;
  for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
  c[row * n + col] = acc;
}

int main(int argc, char** argv) {
  return run_matmul(
      argc, argv,
      [](const float* a, const float* b, float* c, cudaStream_t s) {
        dim3 block(16, 16), grid(kN / 16, kN / 16);
        matmul_naive<<<grid, block, 0, s>>>(a, b, c, kN);
      },
      "matmul_naive");
}
