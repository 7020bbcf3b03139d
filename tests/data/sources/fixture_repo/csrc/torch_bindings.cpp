// Op registration (fixture).
#include <torch/library.h>

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor! result, Tensor input, float epsilon) -> ()");
  ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}
