"""c = a + b, but launched on a side stream the caller's stream never waits on.

CUDA events recorded on the current stream see none of this work, so a
stream-local timer calls it almost free; the CUPTI union counts it.
"""
import torch

_side = None


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n = 1 << 26
    return [torch.randn(n, device=device), torch.randn(n, device=device)]


def add(a, b):
    global _side
    if not a.is_cuda:
        return a + b
    if _side is None:
        _side = torch.cuda.Stream()
    out = torch.empty_like(a)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        torch.add(a, b, out=out)
    return out
