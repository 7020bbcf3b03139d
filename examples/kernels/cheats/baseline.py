"""The baseline: eager PyTorch, silu then multiply (two kernels)."""
import torch.nn.functional as F

from common import get_inputs  # noqa: F401


def swiglu(a, b):
    return F.silu(a) * b
