#pragma once
// No headers: a HIP-only project makes this HIP.
__global__ void hip_shared(float* p) { p[0] = 1; }
