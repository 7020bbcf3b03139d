// CUDA build of the scaling kernel (fixture; a HIP twin lives in csrc/rocm).
template <typename T>
__global__ void scaled_quant_kernel(T* out, const float* in, float scale) {
  out[threadIdx.x] = static_cast<T>(in[threadIdx.x] * scale);
}
