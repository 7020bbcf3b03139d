__global__ void test_only_cuda(float* p) { p[0] = 0; }
