// A kernel whose name only appears through a macro: found by its launch site.
#define DEFINE_ZERO_KERNEL(kernel_name) \
  __global__ void kernel_name(float* x) { x[0] = 0.f; }

DEFINE_ZERO_KERNEL(macro_defined_kernel)
