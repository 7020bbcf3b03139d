"""Records a real PyTorch profiler trace whose communication kernels are not
NCCL's: PyTorch's symmetric-memory all-reduce (torch.ops.symm_mem), the kind
of custom all-reduce engines use beside NCCL. One process, one GPU, a process
group of size 1: the kernels run for real (a rank reduces with itself), which
is all Magpie's rule needs — they must count as communication, not compute.

Writes into OUTDIR:
  symm_mem_allreduce.json.gz   matmuls, then symmetric-memory all-reduces of
                               their output, a few steps (record_shapes=True)
  symm_mem_summary.json        which variants ran, and each GPU kernel's name
Usage: python record_symm_mem.py OUTDIR
"""
import gzip
import json
import os
import shutil
import sys

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "symm_mem_out")
os.makedirs(OUT, exist_ok=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29561")
# NVLink multicast (NVLS) stays off on these machines; the one-shot and
# two-shot all-reduces read peers' buffers directly and need none.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402

group_name = dist.group.WORLD.group_name
n = 4096 * 1024
buf = symm_mem.empty(n, device="cuda", dtype=torch.bfloat16)
symm_mem.rendezvous(buf, group_name)
a = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

variants = {
    "one_shot_all_reduce": lambda t: torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group_name),
    "two_shot_all_reduce_": lambda t: torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", group_name),
}
ran = {}
for name, fn in variants.items():
    try:
        buf.copy_((a @ w).flatten())
        fn(buf)
        torch.cuda.synchronize()
        ran[name] = "ok"
    except Exception as e:  # an op this build or GPU lacks: record why, go on
        ran[name] = f"{type(e).__name__}: {e}"[:300]
print("variants:", ran, flush=True)
usable = [k for k, v in ran.items() if v == "ok"]
if not usable:
    json.dump({"variants": ran, "kernels": []}, open(os.path.join(OUT, "symm_mem_summary.json"), "w"), indent=1)
    sys.exit("no symmetric-memory all-reduce ran on this machine")

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for step in range(4):
        with record_function(f"step_{step}"):
            y = a @ w
            buf.copy_(y.flatten())
            for name in usable:
                variants[name](buf)
            y = torch.relu(y)
    torch.cuda.synchronize()

tmp = os.path.join(OUT, "symm_mem_allreduce.json")
prof.export_chrome_trace(tmp)
with open(tmp, "rb") as f:
    events = json.load(f)["traceEvents"]
with open(tmp, "rb") as f, gzip.open(tmp + ".gz", "wb") as g:
    shutil.copyfileobj(f, g)
os.remove(tmp)
kernels = sorted({e["name"] for e in events if e.get("cat") == "kernel"})
json.dump({"variants": ran, "kernels": kernels}, open(os.path.join(OUT, "symm_mem_summary.json"), "w"), indent=1)
print("kernels:", *kernels, sep="\n  ", flush=True)
dist.destroy_process_group()
