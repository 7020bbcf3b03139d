"""Inputs shared by the softmax implementations: fresh random rows each call."""
import torch

ROWS, COLS = 8192, 4096


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return [torch.randn(ROWS, COLS, device=device, dtype=torch.float32)]
