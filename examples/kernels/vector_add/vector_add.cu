// c = a + b over 2^26 floats (768 MB moved per launch). Exit 0 only when every
// element is right; prints MAGPIE_LATENCY_JSON with one sample per launch.
// Built with -DWRONG it writes only the first half: the "deliberately wrong" example.
#include "../common/harness.cuh"

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
#ifdef WRONG
  if (i < n / 2) c[i] = a[i] + b[i];
#else
  if (i < n) c[i] = a[i] + b[i];
#endif
}

int main(int argc, char** argv) {
  const size_t n = size_t{1} << 26;
  std::vector<float> a(n), b(n), c(n);
  fill_random(a, 1);
  fill_random(b, 2);
  float *da, *db, *dc;
  CHECK_CUDA(cudaMalloc(&da, n * 4));
  CHECK_CUDA(cudaMalloc(&db, n * 4));
  CHECK_CUDA(cudaMalloc(&dc, n * 4));
  CHECK_CUDA(cudaMemcpy(da, a.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dc, 0xff, n * 4));  // poison: unwritten outputs read NaN
  auto launch = [&](cudaStream_t s) {
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    vector_add<<<blocks, 256, 0, s>>>(da, db, dc, n);
  };
  launch(nullptr);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(c.data(), dc, n * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(c[i] == a[i] + b[i])) ++bad;
  }
  if (bad) {
    std::printf("FAILED: %zu of %zu elements wrong\n", bad, n);
    return 1;
  }
  std::printf("PASSED: %zu elements\n", n);
  time_and_report(launch, iterations_from_args(argc, argv), "vector_add");
  return 0;
}
