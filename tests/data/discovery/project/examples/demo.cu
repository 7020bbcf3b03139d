__global__ void example_kernel(float* p) { p[0] = 1; }
