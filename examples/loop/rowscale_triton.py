"""Candidate for the replayed `aten::mul` float32[16,1024,4096] * float32[16,1024,1] of the H200
Llama trace (rank 7: RMSNorm's scaling of each row by its reciprocal RMS).

PyTorch's broadcasting elementwise kernel reads the per-row scale through general broadcast
indexing; this Triton kernel gives each program one row: it loads the row's scale once and
streams the 4096 elements of the row. `magpie compare` decides whether that is faster.
Copied over candidate.py by examples/loop/run_h200_loop.sh.
"""
import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # a machine without Triton: the candidate is the op itself
    triton = None

if triton is not None:
    @triton.jit
    def _rowscale(x_ptr, s_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        scale = tl.load(s_ptr + row)
        for start in tl.range(0, n_cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n_cols
            x = tl.load(x_ptr + row * n_cols + offs, mask=mask)
            tl.store(y_ptr + row * n_cols + offs, x * scale, mask=mask)


def replay(a, b):
    if triton is None or not a.is_cuda or b.shape[-1] != 1 or a.shape[:-1] != b.shape[:-1]:
        return a * b
    x, s = a.contiguous(), b.contiguous()
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _rowscale[(x.numel() // n_cols,)](x, s, y, n_cols, BLOCK=min(4096, triton.next_power_of_2(n_cols)),
                                     num_warps=8)
    return y
