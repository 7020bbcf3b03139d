# Triton attention kernels (fixture).
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, num_warps=4)],
    key=["N"],
)
@triton.jit
def _fwd_kernel(Q, K, V, Out, N, BLOCK: tl.constexpr):
    pass


@triton.jit(do_not_specialize=["n"])
def kernel_unified_attention_2d(q_ptr, n):
    pass


def launch_attention(q, k, v):
    # A plain Python helper: a def, not a Triton kernel.
    return q


def __global__(x):  # Python files are not scanned for CUDA patterns
    return x
