"""GPU time of L2-flush candidates (2x L2 bytes), by CUDA events over 200 calls each, and the
eviction they achieve: time of a 16 MB read right after the flush vs right after itself."""
import torch, statistics
dev = torch.cuda.current_device(); l2 = torch.cuda.get_device_properties(dev).L2_cache_size
n = 2 * l2
bufs = {"int32": torch.ones(n // 4, dtype=torch.int32, device="cuda"),
        "f32": torch.ones(n // 4, dtype=torch.float32, device="cuda"),
        "bf16": torch.ones(n // 2, dtype=torch.bfloat16, device="cuda"),
        "u8": torch.ones(n, dtype=torch.uint8, device="cuda")}
cands = {"int32.sum": lambda: bufs["int32"].sum(), "f32.sum": lambda: bufs["f32"].sum(),
         "f32.amax": lambda: bufs["f32"].amax(), "int32.amax": lambda: bufs["int32"].amax(),
         "bf16.amax": lambda: bufs["bf16"].amax(), "f32.view2d.sum0": lambda: bufs["f32"].view(-1, 4096).sum(0),
         "int64view.amax": lambda: bufs["int32"].view(torch.int64).amax(),
         "f32.any": lambda: bufs["f32"].any(), "u8.any": lambda: bufs["u8"].any(),
         "zero_ L2": lambda: bufs["u8"][: l2].zero_()}
probe = torch.ones(4 << 20, dtype=torch.float32, device="cuda")
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
def t(fn, k=200):
    v = []
    for _ in range(k):
        torch.cuda.synchronize(); a.record(); fn(); b.record(); torch.cuda.synchronize(); v.append(a.elapsed_time(b) * 1e3)
    return statistics.median(v)
for _ in range(3):
    for f in cands.values(): f()
print("L2", l2, "bytes; flush buffer", n, "bytes")
hot = []
for _ in range(100):
    probe.sum(); torch.cuda.synchronize(); a.record(); probe.sum(); b.record(); torch.cuda.synchronize(); hot.append(a.elapsed_time(b) * 1e3)
print("probe read after itself (hot): %.1f us" % statistics.median(hot))
for name, f in cands.items():
    cold = []
    for _ in range(100):
        f(); torch.cuda.synchronize(); a.record(); probe.sum(); b.record(); torch.cuda.synchronize(); cold.append(a.elapsed_time(b) * 1e3)
    print("%-16s %7.1f us per flush; probe after it %.1f us" % (name, t(f), statistics.median(cold)))
