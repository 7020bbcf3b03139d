"""Records PyTorch profiler traces of a conv1d + linear model under torch.autocast.

Under autocast the op the user wrote (aten::conv1d, aten::linear) launches only
the dtype casts itself; the convolution and GEMM kernels run in ops nested
under it (aten::cudnn_convolution, aten::addmm). Magpie's tracelens tests use
these traces to check that the outer op gets its whole subtree's kernels and
that no rate exceeds the device's peak.

Writes into OUTDIR:
  autocast_shapes.json.gz    training steps (forward + backward) in bf16 autocast,
                             fp32 parameters, record_shapes=True
  autocast_noshapes.json.gz  the same steps with record_shapes=False, plus a
                             one-rank NCCL all_gather (c10d::allgather_)
Usage: python record_autocast.py OUTDIR   (needs a CUDA GPU)
"""
import gzip
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "autocast_out")
os.makedirs(OUT, exist_ok=True)
dev = "cuda"
torch.manual_seed(0)


class ConvLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(256, 512, kernel_size=3, padding=1)
        self.proj = nn.Linear(512, 1024)

    def forward(self, x):  # x [B, 256, T]
        y = self.conv(x)  # [B, 512, T]
        return self.proj(y.transpose(1, 2))  # [B, T, 1024]


model = ConvLinear().to(dev)  # fp32 parameters: autocast casts them per call
x = torch.randn(8, 256, 2048, device=dev)


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().square().mean()
    loss.backward()
    model.zero_grad(set_to_none=True)


def save(prof, name):
    tmp = os.path.join(OUT, name + ".json")
    prof.export_chrome_trace(tmp)
    with open(tmp, "rb") as f, gzip.open(os.path.join(OUT, name + ".json.gz"), "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(tmp)
    print("wrote", name, os.path.getsize(os.path.join(OUT, name + ".json.gz")), "bytes", flush=True)


for _ in range(3):  # warm-up: cuDNN/cuBLAS heuristics, allocator
    step()
torch.cuda.synchronize()

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for _ in range(3):
        step()
    torch.cuda.synchronize()
save(prof, "autocast_shapes")

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29531")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device(dev, 0))
buf = torch.randn(1 << 20, device=dev)
gathered = torch.empty(1 << 20, device=dev)
dist.all_gather_into_tensor(gathered, buf)
torch.cuda.synchronize()

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False) as prof:
    for _ in range(2):
        step()
    out = [torch.empty_like(buf)]
    dist.all_gather(out, buf)
    dist.all_gather_into_tensor(gathered, buf)
    torch.cuda.synchronize()
save(prof, "autocast_noshapes")
dist.destroy_process_group()
