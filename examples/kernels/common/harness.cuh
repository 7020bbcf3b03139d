// Shared by the CUDA examples: error checks, a cold-L2 timing loop with
// CUDA events, and the MAGPIE_LATENCY_JSON line (docs/KERNEL_EVALUATION.md).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)

// Evicts L2 by reading a buffer twice its size: reads leave clean lines, so the
// timed kernel pays no write-back for the flush (a memset would leave dirty ones).
__global__ void flush_l2_by_reading(const int4* buf, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    int4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;  // never true for a zeroed buffer; keeps the loads alive
}

// Iterations from argv[1] (default 50).
inline int iterations_from_args(int argc, char** argv) { return argc > 1 ? std::atoi(argv[1]) : 50; }

// Times `launch(stream)` `iters` times, each after an L2 flush, and prints one
// MAGPIE_LATENCY_JSON line with every sample.
template <class Launch>
void time_and_report(Launch launch, int iters, const char* kernel_name) {
  int dev = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  size_t flush_bytes = 2 * static_cast<size_t>(l2);
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes + 64));
  CHECK_CUDA(cudaMemset(flush, 0, flush_bytes + 64));
  int* sink = reinterpret_cast<int*>(static_cast<char*>(flush) + flush_bytes);
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch(s);  // warm-up
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    flush_l2_by_reading<<<1024, 256, 0, s>>>(static_cast<const int4*>(flush), flush_bytes / 16, sink);
    CHECK_CUDA(cudaEventRecord(a, s));
    launch(s);
    CHECK_CUDA(cudaEventRecord(b, s));
    CHECK_CUDA(cudaEventSynchronize(b));
    CHECK_CUDA(cudaGetLastError());
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double med = sorted[sorted.size() / 2];
  if (sorted.size() % 2 == 0) med = (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  double mean = 0, var = 0;
  for (double v : ms) mean += v;
  mean /= ms.size();
  for (double v : ms) var += (v - mean) * (v - mean);
  double sd = ms.size() > 1 ? std::sqrt(var / (ms.size() - 1)) : 0;
  std::printf("MAGPIE_LATENCY_JSON: {\"mode\":\"events\",\"kernel_name\":\"%s\",\"stats\":{\"median_ms\":%.6f,"
              "\"p50_ms\":%.6f,\"p99_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,\"std_ms\":%.6f,\"n_repeat\":%d,"
              "\"n_retries\":0,\"estimate_ms\":%.6f,\"samples_ms\":[",
              kernel_name, med, med, sorted[std::min(sorted.size() - 1, static_cast<size_t>(0.99 * (sorted.size() - 1) + 0.5))],
              sorted.front(), sorted.back(), sd, iters, med);
  for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.6f", i ? "," : "", ms[i]);
  std::printf("]}}\n");
  CHECK_CUDA(cudaFree(flush));
  CHECK_CUDA(cudaStreamDestroy(s));
}

// Uniform random floats in [-1, 1) from a fixed seed (never zeros: they hide bugs).
inline void fill_random(std::vector<float>& v, unsigned seed) {
  unsigned x = seed * 2654435761u + 1;
  for (auto& f : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    f = static_cast<float>(x & 0xffffff) / 8388608.0f - 1.0f;
  }
}
