"""Shared inputs for the cheating-candidate suite: y = silu(a) * b on 2^25 floats."""
import torch

N = 1 << 25


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return [torch.randn(N, device=device), torch.randn(N, device=device)]
