// Diagnostic twin of vector_add/vector_add.cu for cupti_modes.py: the same
// 2^26-float add, but a grid-stride loop over 8 blocks per SM instead of one
// block per 256 elements, so per-block costs (CUPTI's patched prologue and
// epilogue) shrink 250-fold while the bytes moved stay the same.
#include "../common/harness.cuh"

__global__ void vector_add_gridstride(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                      size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  const size_t n = size_t{1} << 26;
  float *da, *db, *dc;
  CHECK_CUDA(cudaMalloc(&da, n * 4));
  CHECK_CUDA(cudaMalloc(&db, n * 4));
  CHECK_CUDA(cudaMalloc(&dc, n * 4));
  CHECK_CUDA(cudaMemset(da, 0, n * 4));
  CHECK_CUDA(cudaMemset(db, 0, n * 4));
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  auto launch = [&](cudaStream_t s) { vector_add_gridstride<<<sms * 8, 256, 0, s>>>(da, db, dc, n); };
  time_and_report(launch, iterations_from_args(argc, argv), "vector_add_gridstride");
  return 0;
}
