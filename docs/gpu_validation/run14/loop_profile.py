"""Where a harness sample's wall time goes (#28), under the CUPTI injection library as in a worker,
and whether magpie_cupti_set_kind switches concurrent -> serial in a running process.
Run: python3 .gpurun/loop_profile.py LIB.so OUTDIR"""
import ctypes, json, os, statistics, sys, time
if "CUDA_INJECTION64_PATH" not in os.environ:
    os.environ.update(CUDA_INJECTION64_PATH=sys.argv[1], MAGPIE_CUPTI_OUTPUT=os.path.join(sys.argv[2], "k.jsonl"),
                      MAGPIE_CUPTI_KIND="concurrent")
    os.execv(sys.executable, [sys.executable] + sys.argv)
sys.path.insert(0, os.path.join(os.getcwd(), "python"))
import torch
from magpie_bench import timing
from magpie_bench.stopping import StdRelCriterion
lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
lib.magpie_cupti_mark.argtypes = [ctypes.c_char_p]
out = sys.argv[2]

def overlap_check(tag):
    """Two 2 ms spins on two streams: overlapping records under concurrent, serialized under serial."""
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    lib.magpie_cupti_mark(("ov_%s_s" % tag).encode())
    t0 = time.perf_counter()
    with torch.cuda.stream(s1): torch.cuda._sleep(4_000_000)
    with torch.cuda.stream(s2): torch.cuda._sleep(4_000_000)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    lib.magpie_cupti_mark(("ov_%s_e" % tag).encode())
    lib.magpie_cupti_flush()
    recs = [json.loads(l) for l in open(os.environ["MAGPIE_CUPTI_OUTPUT"])]
    ts = {r["marker"]: r["ts"] for r in recs if "marker" in r}
    ks = sorted((r["start"], r["end"]) for r in recs if "start" in r and ts["ov_%s_s" % tag] <= r["start"] <= ts["ov_%s_e" % tag])
    overl = max(0, ks[0][1] - ks[1][0]) / 1e3 if len(ks) >= 2 else None
    print("%s: %d kernels, overlap %.1f us, wall %.2f ms" % (tag, len(ks), overl or 0, wall * 1e3), flush=True)

overlap_check("concurrent_before")
print("set_kind(serial) ->", lib.magpie_cupti_set_kind(b"serial"), flush=True)
overlap_check("serial_after")
print("set_kind(concurrent) ->", lib.magpie_cupti_set_kind(b"concurrent"), flush=True)
overlap_check("concurrent_again")

def profile(name, fn, n=2000):
    dev = torch.cuda.current_device()
    for _ in range(5): fn()
    torch.cuda.synchronize()
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush_buf = torch.ones(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device="cuda")
    clock = timing.ClockMonitor(dev)
    cycles = timing.spin_cycles(fn, clock.max_mhz)
    crit = StdRelCriterion(0.0, 10, 1e9, 1e9, max_samples=10**9)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    parts = {k: [] for k in ("flush", "sync1", "mark1", "spin", "call", "sleep1", "sync2", "mark2", "elapsed", "nvml", "crit")}
    kept = []
    pc = time.perf_counter
    for i in range(n):
        t = pc(); flush_buf.sum(); t1 = pc(); parts["flush"].append(t1 - t)
        torch.cuda.synchronize(); t2 = pc(); parts["sync1"].append(t2 - t1)
        lib.magpie_cupti_mark(b"x"); t3 = pc(); parts["mark1"].append(t3 - t2)
        torch.cuda._sleep(cycles); t4 = pc(); parts["spin"].append(t4 - t3)
        a.record(); fn(); b.record(); t5 = pc(); parts["call"].append(t5 - t4)
        torch.cuda._sleep(1); t6 = pc(); parts["sleep1"].append(t6 - t5)
        torch.cuda.synchronize(); t7 = pc(); parts["sync2"].append(t7 - t6)
        lib.magpie_cupti_mark(b"y"); t8 = pc(); parts["mark2"].append(t8 - t7)
        ms = a.elapsed_time(b); t9 = pc(); parts["elapsed"].append(t9 - t8)
        clock.sm_mhz(); t10 = pc(); parts["nvml"].append(t10 - t9)
        kept.append(ms / 1e3); crit.should_stop(kept, sum(kept), 0.0); t11 = pc(); parts["crit"].append(t11 - t10)
    tot = sum(sum(v) for v in parts.values()) / n * 1e6
    print("%s: kernel %.1f us, spin %d cycles, per-sample %.0f us: %s" % (
        name, statistics.median(kept) * 1e6, cycles, tot,
        ", ".join("%s %.1f" % (k, statistics.mean(v) * 1e6) for k, v in parts.items())), flush=True)

x = torch.randn(8192, 8192, device="cuda") * 0 + torch.randn(1, device="cuda")
A = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16); W = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for kind in ("concurrent", "serial"):
    lib.magpie_cupti_set_kind(kind.encode())
    profile("gelu_8192 " + kind, lambda: torch.nn.functional.gelu(x))
    profile("mm_16x4096x4096 " + kind, lambda: A @ W)
lib.magpie_cupti_flush()
print("jsonl bytes", os.path.getsize(os.environ["MAGPIE_CUPTI_OUTPUT"]))
