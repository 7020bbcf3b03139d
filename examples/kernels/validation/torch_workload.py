"""A PyTorch workload for measuring libmagpie_cupti.so's overhead: a mix of
bf16 GEMMs and short elementwise/softmax kernels, timed by the wall clock
around synchronised batches. Run once with CUDA_INJECTION64_PATH set and once
without; compare the printed medians."""
import json
import statistics
import sys
import time

import torch


def main():
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(8192, 1024, device="cuda")

    def step():
        c = a @ b
        y = torch.softmax(x, dim=-1)
        z = (y * 2 + 1).relu()
        return c, z

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(50):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / 50 * 1e3)
    print(json.dumps({"median_ms_per_step": statistics.median(times), "min_ms": min(times),
                      "kernels_per_step": 5, "label": sys.argv[1] if len(sys.argv) > 1 else ""}))


if __name__ == "__main__":
    main()
