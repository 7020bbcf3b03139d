"""Deliberately wrong: subtracts the row max in place (mutates the input) and
forgets to normalise. The correctness gate must reject it."""
import torch

from inputs import get_inputs  # noqa: F401


def softmax(x):
    x.sub_(x.max(dim=-1, keepdim=True).values)
    return torch.exp(x)
