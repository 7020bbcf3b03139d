"""Numerical correctness of a candidate against a baseline.

For each seed: fresh random inputs; the baseline runs on clones; the caching
allocator is poisoned (NaN blocks the size of each expected output) so an
output the candidate never writes reads NaN instead of a stale copy of the
baseline's result; the candidate runs; its inputs are compared with their
clones (mutation is an error); outputs are compared with dtype-aware
rtol/atol, counting NaN and Inf separately. Without a baseline only
finiteness and input immutability are checked, and the report says so.
"""
import random

import torch

from .tolerance import tolerance_for


def as_list(x):
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def clone_tree(x):
    if torch.is_tensor(x):
        return x.detach().clone()
    if isinstance(x, (list, tuple)):
        return type(x)(clone_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: clone_tree(v) for k, v in x.items()}
    return x


def tensors(x):
    if torch.is_tensor(x):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in tensors(v)]
    return []


def same_bits(a, b):
    """Equal, with NaN equal to NaN (an untouched input compares equal to its clone)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0)) and
                    torch.equal(torch.isnan(a), torch.isnan(b)))
    return bool(torch.equal(a, b))


def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
        numpy.random.seed(seed)
    except ImportError:
        pass


def poison_allocator(shapes_dtypes, device):
    """Leave NaN-filled (or max-int) blocks of each size in the caching allocator."""
    if device.type != "cuda":
        return
    blocks = []
    for shape, dtype in shapes_dtypes:
        t = torch.empty(shape, dtype=dtype, device=device)
        if t.is_floating_point():
            t.fill_(float("nan"))
        elif dtype == torch.bool:
            t.fill_(True)
        else:
            t.fill_(torch.iinfo(dtype).max)
        blocks.append(t)
    del blocks  # freed blocks stay cached: the next allocations of these sizes reuse them


def compare_tensor(out, ref, rtol, atol, equal_nan):
    """A dict describing the comparison of one output tensor."""
    r = {"shape": list(out.shape), "dtype": str(out.dtype).replace("torch.", "")}
    if tuple(out.shape) != tuple(ref.shape):
        r.update(ok=False, error="shape %s != baseline %s" % (list(out.shape), list(ref.shape)))
        return r
    if out.dtype != ref.dtype:
        r["warning"] = "dtype %s differs from baseline %s" % (out.dtype, ref.dtype)
    o = out.detach().to(torch.float64) if out.is_floating_point() or ref.is_floating_point() else out.detach()
    f = ref.detach().to(o.dtype).to(o.device)
    if not o.is_floating_point():
        mism = int((o != f).sum())
        r.update(ok=mism == 0, mismatches=mism, rtol=0.0, atol=0.0)
        return r
    nan_o, nan_f = torch.isnan(o), torch.isnan(f)
    inf_o, inf_f = torch.isinf(o), torch.isinf(f)
    r.update(nan_out=int(nan_o.sum()), nan_ref=int(nan_f.sum()), inf_out=int(inf_o.sum()), inf_ref=int(inf_f.sum()))
    finite = ~(nan_o | nan_f | inf_o | inf_f)
    diff = (o - f).abs()
    bound = atol + rtol * f.abs()
    bad = finite & (diff > bound)
    nan_bad = (nan_o & ~nan_f) | (nan_f & ~nan_o) | ((nan_o & nan_f) if not equal_nan else torch.zeros_like(nan_o))
    inf_bad = (inf_o | inf_f) & ~(inf_o & inf_f & (o == f))
    mism = int(bad.sum()) + int(nan_bad.sum()) + int(inf_bad.sum())
    r.update(ok=mism == 0, mismatches=mism, numel=o.numel(), rtol=rtol, atol=atol,
             max_abs_err=float(diff[finite].max()) if bool(finite.any()) else 0.0,
             max_rel_err=float((diff[finite] / f[finite].abs().clamp_min(1e-30)).max()) if bool(finite.any()) else 0.0)
    if mism:
        idx = torch.nonzero((bad | nan_bad | inf_bad).reshape(-1))[0].item()
        r["first_mismatch"] = {"flat_index": idx, "out": float(o.reshape(-1)[idx]), "ref": float(f.reshape(-1)[idx])}
        if int(nan_o.sum()) and not int(nan_f.sum()):
            r["error"] = "%d NaN outputs where the baseline has none (unwritten output or overflow)" % int(nan_o.sum())
        else:
            r["error"] = "%d of %d elements outside rtol=%g atol=%g (max abs err %.3g)" % (
                mism, o.numel(), rtol, atol, r["max_abs_err"])
    return r


def check(target, get_inputs, baseline=None, seeds=(42, 43, 44), rtol=None, atol=None, equal_nan=False,
          device=None):
    """Returns the report dict written to --json."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    report = {"success": True, "errors": [], "checks": [], "device": str(device), "seeds": list(seeds),
              "finiteness_only": baseline is None,
              "scope": ("finiteness and input immutability (no baseline)" if baseline is None else
                        "numerical vs baseline on %d seeds, input immutability, poisoned outputs" % len(seeds))}
    for seed in seeds:
        seed_all(seed)
        inputs = as_list(get_inputs())
        if all(float(t.abs().sum()) == 0 for t in tensors(inputs) if t.is_floating_point() and t.numel()):
            report["errors"].append("seed %d: every floating-point input is zero: use random inputs" % seed)
        saved = clone_tree(inputs)
        entry = {"seed": seed, "ok": True, "outputs": []}
        ref = None
        if baseline is not None:
            ref = as_list(baseline(*clone_tree(inputs)))
            poison_allocator([(t.shape, t.dtype) for t in tensors(ref)], device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        out = as_list(target(*inputs))
        if device.type == "cuda":
            torch.cuda.synchronize()
        for i, (a, b) in enumerate(zip(tensors(inputs), tensors(saved))):
            if not same_bits(a, b):
                entry["ok"] = False
                report["errors"].append("seed %d: the implementation modified input %d in place" % (seed, i))
        outs = tensors(out)
        if ref is not None:
            refs = tensors(ref)
            if len(outs) != len(refs):
                entry["ok"] = False
                report["errors"].append("seed %d: %d outputs, baseline has %d" % (seed, len(outs), len(refs)))
            for i, (o, f) in enumerate(zip(outs, refs)):
                rt, at = tolerance_for(str(f.dtype), rtol, atol)
                c = compare_tensor(o, f, rt, at, equal_nan)
                entry["outputs"].append(c)
                if not c["ok"]:
                    entry["ok"] = False
                    report["errors"].append("seed %d, output %d: %s" % (seed, i, c.get("error", "mismatch")))
        else:
            for i, o in enumerate(outs):
                if o.is_floating_point():
                    nan, inf = int(torch.isnan(o).sum()), int(torch.isinf(o).sum())
                    entry["outputs"].append({"nan_out": nan, "inf_out": inf, "numel": o.numel()})
                    if nan or inf:
                        entry["ok"] = False
                        report["errors"].append("seed %d, output %d: %d NaN and %d Inf values" % (seed, i, nan, inf))
        report["checks"].append(entry)
        report["success"] = report["success"] and entry["ok"]
    report["success"] = report["success"] and not report["errors"]
    return report
