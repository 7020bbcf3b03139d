#include <hip/hip_runtime.h>
__global__ void hip_main(float* p) { p[0] = 0; }
