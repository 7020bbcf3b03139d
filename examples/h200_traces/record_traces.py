"""Records real PyTorch profiler traces on a CUDA GPU for Magpie's trace tests.

Writes into OUTDIR:
  graph_capture.json.gz / graph_replay.json.gz  plain torch.cuda.graph: the capture, then replays
  compile_default.json.gz + inductor_cache/    torch.compile (inductor, triton kernels) and its cache
  compile_reduce_overhead.json.gz              torch.compile mode="reduce-overhead" (CUDA graph trees)
  llama_prefill_decode.json.gz                 a Llama-shaped model: one prefill, then decode steps
All with record_shapes=True. Usage: python record_traces.py OUTDIR [--only=graph]
(--only=graph: the graph pair alone).
"""
import gzip
import json
import os
import shutil
import sys

ARGS = [a for a in sys.argv[1:] if not a.startswith("--only=")]
ONLY = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")), "")
OUT = os.path.abspath(ARGS[0] if ARGS else "traces_out")
os.makedirs(OUT, exist_ok=True)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(OUT, "inductor_cache")
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(OUT, "triton_cache"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

dev = "cuda"
torch.manual_seed(0)
ACT = [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def save(prof, name):
    tmp = os.path.join(OUT, name + ".json")
    prof.export_chrome_trace(tmp)
    with open(tmp, "rb") as f, gzip.open(os.path.join(OUT, name + ".json.gz"), "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(tmp)
    print("wrote", name, os.path.getsize(os.path.join(OUT, name + ".json.gz")), "bytes", flush=True)


class Block(nn.Module):
    def __init__(self, d=1024, h=16, ff=2816):
        super().__init__()
        self.h = h
        self.norm1 = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.norm2 = nn.RMSNorm(d)
        self.gate_up = nn.Linear(d, 2 * ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x, kv=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.h, d // self.h).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        if kv is not None:
            k = torch.cat([kv[0], k], dim=2)
            v = torch.cat([kv[1], v], dim=2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=kv is None)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        g, u = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u), (k, v)


class TinyLlama(nn.Module):
    def __init__(self, vocab=32000, d=1024, layers=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.norm = nn.RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, cache=None):
        x = self.emb(ids)
        new = []
        for i, blk in enumerate(self.blocks):
            x, kv = blk(x, None if cache is None else cache[i])
            new.append(kv)
        return torch.softmax(self.head(self.norm(x[:, -1:])).float(), dim=-1), new


def mlp():
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.LayerNorm(1024)).to(dev, torch.bfloat16)


# --- plain torch.cuda.graph: capture under the profiler, then replays ---
# The graph holds cuBLAS GEMMs (the MLP's Linear layers, and one large bf16 GEMM of the
# shape that makes cuBLAS zero a workspace on Hopper), elementwise kernels, layer norm,
# softmax, cuDNN attention, a CUB radix sort and a memset of its own: a custom op that clears a scratch
# buffer with cudaMemsetAsync, as engines' custom ops do. The memset is what a plain
# capture trace shows only as a cudaMemsetAsync launch with no kernel event.
def _cudart():
    import ctypes
    import glob
    names = ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]
    for base in sys.path:
        names += sorted(glob.glob(os.path.join(base, "nvidia", "**", "libcudart.so*"), recursive=True))
    for n in names:
        try:
            lib = ctypes.CDLL(n)
            lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
            return lib
        except OSError:
            continue
    raise RuntimeError("no libcudart found")


CUDART = _cudart()


@torch.library.custom_op("magpie_rec::zero_scratch_", mutates_args={"x"})
def zero_scratch_(x: torch.Tensor) -> None:
    rc = CUDART.cudaMemsetAsync(x.data_ptr(), 0, x.numel() * x.element_size(),
                                torch.cuda.current_stream().cuda_stream)
    assert rc == 0, f"cudaMemsetAsync returned {rc}"


m = mlp()
static_in = torch.randn(64, 1024, device=dev, dtype=torch.bfloat16)
big_a = torch.randn(16384, 4096, device=dev, dtype=torch.bfloat16)
big_b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
q = torch.randn(4, 8, 1024, 128, device=dev, dtype=torch.bfloat16)
scratch = torch.empty(1 << 20, device=dev, dtype=torch.float32)
keys = torch.randn(1 << 20, device=dev)


def graph_body():
    zero_scratch_(scratch)
    y = torch.softmax(m(static_in).float(), dim=-1)
    z = torch.mm(big_a, big_b)
    a = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    srt = torch.sort(keys).values  # CUB radix sort: its own cudaMemsetAsync of the bins
    return y, z, a, srt


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):
        graph_body()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with profile(activities=ACT, record_shapes=True) as prof:
    with torch.no_grad(), torch.cuda.graph(g):
        static_out = graph_body()
    torch.cuda.synchronize()
save(prof, "graph_capture")
with profile(activities=ACT, record_shapes=True) as prof:
    for i in range(5):
        with record_function("replay_step"):
            static_in.copy_(torch.randn_like(static_in))
            g.replay()
    torch.cuda.synchronize()
save(prof, "graph_replay")
if ONLY == "graph":
    sys.exit(0)

# --- torch.compile (inductor) with its cache kept ---
m2 = mlp()
x2 = torch.randn(64, 1024, device=dev, dtype=torch.bfloat16)
cm = torch.compile(m2)
with torch.no_grad():
    for _ in range(3):
        cm(x2)
    torch.cuda.synchronize()
    with profile(activities=ACT, record_shapes=True) as prof:
        for _ in range(3):
            cm(x2)
        torch.cuda.synchronize()
save(prof, "compile_default")
cm3 = torch.compile(mlp(), mode="reduce-overhead")
with torch.no_grad():
    for _ in range(4):
        cm3(x2).clone()
    torch.cuda.synchronize()
    with profile(activities=ACT, record_shapes=True) as prof:
        for _ in range(3):
            cm3(x2).clone()
        torch.cuda.synchronize()
save(prof, "compile_reduce_overhead")

# --- Llama-shaped prefill + decode ---
model = TinyLlama().to(dev, torch.bfloat16).eval()
ids = torch.randint(0, 32000, (4, 512), device=dev)
with torch.no_grad():
    model(ids)  # warm-up
    torch.cuda.synchronize()
    with profile(activities=ACT, record_shapes=True) as prof:
        with record_function("prefill"):
            p, cache = model(ids)
        tok = torch.multinomial(p[:, -1], 1)
        for step in range(16):
            with record_function("decode"):
                p, cache = model(tok, cache)
            tok = torch.argmax(p[:, -1], dim=-1, keepdim=True)
        torch.cuda.synchronize()
save(prof, "llama_prefill_decode")

with open(os.path.join(OUT, "README.md"), "w") as f:
    f.write("Recorded by examples/h200_traces/record_traces.py on %s, torch %s, CUDA %s\n"
            % (torch.cuda.get_device_name(0), torch.__version__, torch.version.cuda))
print("done", flush=True)
