"""Timing integrity: do the timed calls really compute what they return?

A correct implementation can still cheat the timer: serve a cached result when
it sees the same input tensors again, return the previous call's output, write
only part of an output whose stale rest happens to be right, mutate its input,
or leave its work on a side stream the caller never waits for. The correctness
check (fresh inputs per seed, in another process) sees none of that. So during
timing, at a few randomly chosen points among the samples, a spot check:

1. refills the SAME input tensors in place with fresh values (same addresses,
   so a cache keyed on identity hits and returns a stale answer);
2. calls the implementation, and snapshots its output in stream order (a
   consumer on the caller's stream sees exactly this);
3. computes the reference on clones of those inputs (the baseline when there is
   one, else the implementation itself on fresh tensors) and compares;
4. times the implementation once on those clones (fresh addresses, so nothing
   is cached): a timed median far below it means work is skipped when inputs
   repeat.

Aliasing an input is rejected; an output buffer reused across calls is only
noted (a CUDA-graph implementation legitimately does that). Each violation
names its rule; docs/KERNEL_EVALUATION.md lists them.
"""
import random
import statistics

import torch

from .check import as_list, clone_tree, compare_tensor, seed_all, tensors
from .tolerance import tolerance_for

# A timed median below this fraction of the same implementation's time on fresh
# inputs is "far less work" (fresh calls run with warm L2, timed ones flushed,
# so an honest implementation is never below ~1).
SKIPPED_WORK_FRACTION = 0.5
# Below this fresh-call time the ratio is launch noise, not evidence.
SKIPPED_WORK_MIN_MS = 0.005


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _storage_ptr(t):
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


class Integrity:
    """Spot checks run by the timing loop at `positions` (sample indices)."""

    def __init__(self, target, inputs, inputs_fn, reference=None, seed=42, rtol=None, atol=None,
                 spots=3, horizon=10, marks=None, device=None):
        self.target, self.inputs, self.inputs_fn, self.reference = target, inputs, inputs_fn, reference
        self.seed, self.rtol, self.atol, self.marks = seed, rtol, atol, marks
        self.device = device or (torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))
        rng = random.Random(seed * 7919 + 17)
        horizon = max(horizon, spots)
        self.positions = set(rng.sample(range(1, horizon + 1), spots))
        self.spots = []        # one dict per spot check
        self.fresh_ms = []     # the implementation on fresh clones (events)
        self.fresh_marks = []  # CUPTI windows of those calls: (start label, end label)
        self.violations, self.warnings = [], []
        self._prev_out = None

    def due(self, i):
        return i in self.positions

    def _violate(self, rule, detail):
        if not any(v["rule"] == rule for v in self.violations):
            self.violations.append({"rule": rule, "detail": detail})

    def spot(self, j):
        """One spot check; j numbers them (seeds and CUPTI labels)."""
        seed_all(self.seed + 1000003 * (j + 1))
        fresh = as_list(self.inputs_fn())
        refilled = 0
        for t, f in zip(tensors(self.inputs), tensors(fresh)):
            if t.shape == f.shape and t.dtype == f.dtype:
                t.copy_(f.to(t.device))
                refilled += 1
        clones = clone_tree(self.inputs)  # before the call: it may mutate its inputs
        _sync(self.device)
        out = as_list(self.target(*self.inputs))
        snap = clone_tree(out)  # stream-ordered: what the caller's stream would read
        _sync(self.device)
        entry = {"spot": j, "inputs_refilled": refilled, "outputs": []}

        in_ptrs = [_storage_ptr(t) for t in tensors(self.inputs)]
        for k, o in enumerate(tensors(out)):
            p = _storage_ptr(o)
            if p is not None and p in in_ptrs:
                self._violate("output aliases an input",
                              "output %d shares storage with input %d: the call works in place or returns a view, "
                              "so repeated timed calls do not redo the work" % (k, in_ptrs.index(p)))
        if self._prev_out is not None:
            prev = {_storage_ptr(o) for o in tensors(self._prev_out)} - {None}
            if any(_storage_ptr(o) in prev for o in tensors(out)):
                note = ("persistent output buffer: successive calls return the same storage (fine for a CUDA "
                        "graph, but a caller keeping an old result sees it overwritten)")
                if note not in self.warnings:
                    self.warnings.append(note)
        self._prev_out = out

        ref_inputs = clone_tree(clones)
        _sync(self.device)
        start = end = None
        if self.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        label = "ic%d" % j
        if self.marks is not None:
            self.marks.mark(label + "s")
        if start is not None:
            start.record()
        own = as_list(self.target(*clones))
        if end is not None:
            end.record()
        _sync(self.device)
        if self.marks is not None:
            self.marks.mark(label + "e")
            self.fresh_marks.append(label)
        if start is not None:
            self.fresh_ms.append(start.elapsed_time(end))
        ref = as_list(self.reference(*ref_inputs)) if self.reference is not None else own
        _sync(self.device)

        outs, refs = tensors(snap), tensors(ref)
        if len(outs) != len(refs):
            self._violate("timed output differs from a fresh computation",
                          "spot check %d: %d outputs, the reference has %d" % (j, len(outs), len(refs)))
        for k, (o, f) in enumerate(zip(outs, refs)):
            rt, at = tolerance_for(str(f.dtype), self.rtol, self.atol)
            c = compare_tensor(o, f, rt, at, equal_nan=False)
            entry["outputs"].append({key: c.get(key) for key in ("ok", "mismatches", "max_abs_err", "error")})
            if not c["ok"]:
                self._violate("timed output differs from a fresh computation",
                              "spot check %d, output %d: %s. The inputs were refilled in place with new values "
                              "(same tensors); the output read in stream order does not match %s on copies of "
                              "them: a result cached by input identity, the previous call's output, a partly "
                              "written output, or work the caller's stream does not wait for" % (
                                  j, k, c.get("error", "mismatch"),
                                  "the baseline" if self.reference is not None else "the same implementation"))
        entry["ok"] = all(o.get("ok") for o in entry["outputs"])
        self.spots.append(entry)

    def finish(self, timed_median_ms, fresh_union_ms=None, unjoined=None):
        """The report's `integrity` block. timed_median_ms: the samples' median (same clock as fresh)."""
        fresh = fresh_union_ms if fresh_union_ms else self.fresh_ms
        block = {"spot_checks": len(self.spots), "positions": sorted(self.positions),
                 "reference": "baseline" if self.reference is not None else "self on fresh inputs",
                 "spots": self.spots}
        if fresh:
            f = statistics.median(fresh)
            block["fresh_call_median_ms"] = f
            block["timed_median_ms"] = timed_median_ms
            if f >= SKIPPED_WORK_MIN_MS and timed_median_ms < SKIPPED_WORK_FRACTION * f:
                self._violate("far less GPU work than a fresh call",
                              "timed windows hold %.4f ms of GPU work, the same implementation on fresh copies of "
                              "its inputs %.4f ms (< %.0f%%): work is skipped when the inputs repeat" % (
                                  timed_median_ms, f, 100 * SKIPPED_WORK_FRACTION))
        if unjoined:
            self._violate("work the caller's stream does not wait for", unjoined)
        block["violations"] = self.violations
        block["warnings"] = self.warnings
        return block
