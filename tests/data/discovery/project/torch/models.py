import torch
import torch.nn as nn
from torch.nn import Module as TorchModule


class RealMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class RealFull(torch.nn.Module):
    def forward(self, x):
        return x


class RealSubclass(RealMLP):
    pass


class Mixin:
    pass


class RealMultiBase(Mixin, nn.Module):
    pass


class RealImportedName(TorchModule):
    pass


class FakePlain(object):
    pass


TEMPLATE = """
class FakeInString(nn.Module):
    pass
"""
