import triton


@triton.jit
def test_only_kernel(x_ptr):
    pass
