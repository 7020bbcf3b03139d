import torch.nn as nn


class TestOnlyModule(nn.Module):
    pass
