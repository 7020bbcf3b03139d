"""Honest and faster: one Triton kernel reads a and b once (expect FASTER)."""
import torch
import triton
import triton.language as tl

from common import get_inputs  # noqa: F401


@triton.jit
def _swiglu_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, a * tl.sigmoid(a) * b, mask=mask)


def swiglu(a, b):
    y = torch.empty_like(a)
    n = a.numel()
    _swiglu_kernel[(triton.cdiv(n, 4096),)](a, b, y, n, BLOCK=4096)
    return y
