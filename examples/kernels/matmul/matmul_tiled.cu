// 32×32 tiles staged in shared memory: each A and B element is read from
// global memory n/32 times instead of n times.
#include "matmul_check.cuh"

constexpr int kTile = 32;

__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile + 1];  // +1: no bank conflicts on the column read
  int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

int main(int argc, char** argv) {
  return run_matmul(
      argc, argv,
      [](const float* a, const float* b, float* c, cudaStream_t s) {
        dim3 block(kTile, kTile), grid(kN / kTile, kN / kTile);
        matmul_tiled<<<grid, block, 0, s>>>(a, b, c, kN);
      },
      "matmul_tiled");
}
