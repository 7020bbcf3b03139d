"""Records one PyTorch profiler trace per rank of a small torch.distributed program for
Magpie's collective report (docs/TRACELENS.md, "Collective report").

One process per GPU over NCCL runs all_reduce, all_gather, reduce_scatter, broadcast and a
send/recv pair at several message sizes, in bf16 and fp32, with matrix products launched
between them on the compute stream so that computation and communication overlap. Profiled
with record_shapes=True; each rank writes rank<r>.pt.trace.json.gz. Outside the profiler,
the largest all_reduce is also timed with CUDA events (cuda_events_rank<r>.json) so that the
bus bandwidth Magpie computes from the trace can be set beside a direct measurement.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and friends): on shared hosts a program that
uses it can take the GPUs out of service. The variables are set before torch is imported, so
the spawned ranks inherit them.

Usage: python record_collectives.py OUTDIR [--sizes-mib 1,16,256] [--world N]
       python record_collectives.py OUTDIR --backend gloo --world 2   (CPU smoke run, no GPU)
"""
import argparse
import gzip
import json
import os
import shutil
import socket
import time

for var, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                   ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[var] = value

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

MIB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collectives(rank, world, dev, dtype, nbytes, gloo):
    """One round of every collective at one message size; a GEMM between each pair."""
    n = nbytes // torch.tensor([], dtype=dtype).element_size()
    x = torch.full((n,), float(rank + 1), dtype=dtype, device=dev)
    a = torch.randn(2048, 2048, dtype=dtype, device=dev)
    work = []
    mm = lambda: work.append(a @ a)  # noqa: E731 (compute that overlaps the collective in flight)
    with record_function(f"all_reduce {nbytes // MIB} MiB"):
        h = dist.all_reduce(x, async_op=True)
        mm()
        h.wait()
    with record_function(f"all_gather {nbytes // MIB} MiB"):
        chunk = x[: n // world]
        if gloo:
            outs = [torch.empty_like(chunk) for _ in range(world)]
            h = dist.all_gather(outs, chunk, async_op=True)
        else:
            out = torch.empty(n // world * world, dtype=dtype, device=dev)
            h = dist.all_gather_into_tensor(out, chunk, async_op=True)
        mm()
        h.wait()
    if not gloo:  # gloo has no reduce_scatter
        with record_function(f"reduce_scatter {nbytes // MIB} MiB"):
            out = torch.empty(n // world, dtype=dtype, device=dev)
            h = dist.reduce_scatter_tensor(out, x[: n // world * world], async_op=True)
            mm()
            h.wait()
    with record_function(f"broadcast {nbytes // MIB} MiB"):
        h = dist.broadcast(x, src=0, async_op=True)
        mm()
        h.wait()
    if world % 2 == 0:
        with record_function(f"send_recv {nbytes // MIB} MiB"):
            peer = rank ^ 1
            if rank % 2 == 0:
                h = dist.isend(x, peer)
            else:
                h = dist.irecv(x, peer)
            mm()
            h.wait()
    return work


def time_all_reduce(dev, dtype, nbytes, iters=20):
    """CUDA events around the collective alone, on the stream NCCL's work is joined to."""
    x = torch.ones(nbytes // torch.tensor([], dtype=dtype).element_size(), dtype=dtype, device=dev)
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dist.all_reduce(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)  # µs
    times.sort()
    return {"collective": "all_reduce", "dtype": str(dtype).replace("torch.", ""), "message_bytes": nbytes,
            "iters": iters, "median_us": times[len(times) // 2], "min_us": times[0], "max_us": times[-1]}


def rank_main(rank, world, port, outdir, sizes, backend):
    gloo = backend == "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    dev = torch.device("cpu") if gloo else torch.device("cuda", rank)
    if not gloo:
        torch.cuda.set_device(dev)
    dtypes = [torch.float32] if gloo else [torch.bfloat16, torch.float32]
    for dtype in dtypes:  # warm-up: NCCL communicators and cuBLAS handles outside the trace
        collectives(rank, world, dev, dtype, sizes[0], gloo)
    if not gloo:
        torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU] + ([] if gloo else [ProfilerActivity.CUDA])
    with profile(activities=acts, record_shapes=True) as prof:
        for dtype in dtypes:
            for nbytes in sizes:
                collectives(rank, world, dev, dtype, nbytes, gloo)
        if not gloo:
            torch.cuda.synchronize()
    tmp = os.path.join(outdir, f"rank{rank}.pt.trace.json")
    prof.export_chrome_trace(tmp)
    with open(tmp, "rb") as f, gzip.open(tmp + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(tmp)
    if not gloo:
        timed = [time_all_reduce(dev, dtype, sizes[-1]) for dtype in dtypes]
        with open(os.path.join(outdir, f"cuda_events_rank{rank}.json"), "w") as f:
            json.dump({"rank": rank, "world_size": world, "device": torch.cuda.get_device_name(dev),
                       "nccl": ".".join(map(str, torch.cuda.nccl.version())), "timed": timed}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: wrote {tmp}.gz", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--sizes-mib", default="1,16,256", help="message sizes in MiB (default 1,16,256)")
    p.add_argument("--world", type=int, default=0, help="ranks (default: every visible GPU)")
    p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    args = p.parse_args()
    world = args.world or torch.cuda.device_count()
    if world < 2:
        raise SystemExit(f"needs at least 2 ranks; {torch.cuda.device_count()} GPU(s) visible")
    sizes = [int(float(s) * MIB) for s in args.sizes_mib.split(",")]
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.time()
    mp.spawn(rank_main, args=(world, free_port(), os.path.abspath(args.outdir), sizes, args.backend),
             nprocs=world, join=True)
    print(f"{world} ranks, sizes {args.sizes_mib} MiB, {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
