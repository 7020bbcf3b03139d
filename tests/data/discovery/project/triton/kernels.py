"""Triton kernels. A docstring mentioning
@triton.jit
def fake_in_docstring(x):
does not count."""
import triton
import triton as tr
import triton.language as tl
from triton import jit as tjit


@triton.jit
def real_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def real_autotuned(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})
@triton.jit(do_not_specialize=["n"])
def real_jit_with_args(x_ptr, n, EVEN: tl.constexpr):
    pass


@tr.jit
def real_alias(x_ptr):
    pass


@tjit
def real_imported_jit(x_ptr):
    pass


# @triton.jit
def fake_commented_decorator(x):
    return x


def launcher(x):
    s = "@triton.jit"
    real_add[(1,)](x, x, x, 1, BLOCK=128)
    return s


@staticmethod
def fake_other_decorator(x):
    return x
