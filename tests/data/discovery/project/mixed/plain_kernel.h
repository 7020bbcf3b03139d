#pragma once
// Neither HIP nor CUDA headers: the project decides (it has .cu files, so CUDA).
__global__ void real_undecided(int* p) { *p = 3; }
