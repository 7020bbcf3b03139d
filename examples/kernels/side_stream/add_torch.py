"""Baseline: c = a + b on the current stream."""
import torch

from add_side_stream import get_inputs  # noqa: F401


def add(a, b):
    return torch.add(a, b)
