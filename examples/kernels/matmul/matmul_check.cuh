// Shared by both matmul examples: C = A·B for 2048×2048 fp32, checked on 4096
// sampled entries against a double-precision dot product.
#pragma once
#include "../common/harness.cuh"

constexpr int kN = 2048;

template <class Launch>
int run_matmul(int argc, char** argv, Launch launch_kernel, const char* name) {
  const size_t nn = size_t{kN} * kN;
  std::vector<float> a(nn), b(nn), c(nn);
  fill_random(a, 3);
  fill_random(b, 4);
  float *da, *db, *dc;
  CHECK_CUDA(cudaMalloc(&da, nn * 4));
  CHECK_CUDA(cudaMalloc(&db, nn * 4));
  CHECK_CUDA(cudaMalloc(&dc, nn * 4));
  CHECK_CUDA(cudaMemcpy(da, a.data(), nn * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), nn * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dc, 0xff, nn * 4));
  auto launch = [&](cudaStream_t s) { launch_kernel(da, db, dc, s); };
  launch(nullptr);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(c.data(), dc, nn * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  unsigned x = 12345;
  for (int t = 0; t < 4096; ++t) {
    x = x * 1664525u + 1013904223u;
    int i = (x >> 8) % kN, j = (x >> 3) % kN;
    double ref = 0, mag = 0;
    for (int k = 0; k < kN; ++k) {
      ref += static_cast<double>(a[static_cast<size_t>(i) * kN + k]) * b[static_cast<size_t>(k) * kN + j];
      mag += std::fabs(static_cast<double>(a[static_cast<size_t>(i) * kN + k]) * b[static_cast<size_t>(k) * kN + j]);
    }
    double got = c[static_cast<size_t>(i) * kN + j];
    if (!(std::fabs(got - ref) <= 1e-5 * mag + 1e-6)) ++bad;
  }
  if (bad) {
    std::printf("FAILED: %d of 4096 sampled entries wrong\n", bad);
    return 1;
  }
  std::printf("PASSED: 4096 sampled entries\n");
  time_and_report(launch, iterations_from_args(argc, argv), name);
  return 0;
}
