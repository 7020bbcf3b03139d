"""Cheat: launches the work on a side stream and returns without making the
caller's stream wait; a consumer on the caller's stream may read it unfinished."""
import torch
import torch.nn.functional as F

from common import get_inputs  # noqa: F401

_side = None


def swiglu(a, b):
    global _side
    if not a.is_cuda:
        return F.silu(a) * b
    if _side is None:
        _side = torch.cuda.Stream()
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        out = F.silu(a) * b
    return out
