"""Timing loop with nvbench's discipline, for CUDA callables.

Per sample: flush L2 by reading a buffer twice its size (reads leave clean
lines, so the timed kernel pays no write-back of the flush), synchronize,
mark, launch a spin kernel that holds the stream while the CPU enqueues the
call (so CPU launch overhead never shows as GPU time), record the start
event, call, record the stop event, synchronize, mark. The marks go through
libmagpie_cupti.so (when CUDA_INJECTION64_PATH loaded it) on CUPTI's clock,
so every kernel of every stream inside each sample's window is known.

Samples are the CUPTI union of kernel time across all streams when the
library is loaded (the events, which see only the current stream, are the
cross-check: a union more than 5% above them means work ran elsewhere), and
the events otherwise. Samples taken while the SM clock was under 75% of its
maximum (NVML) are discarded as throttled.
"""
import ctypes
import math
import os
import statistics
import time

import torch

from .intervals import read_jsonl, unjoined_work, window_unions
from .stopping import StdRelCriterion, rel_stddev


SPIN_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: holds the stream, never timed


def spin_cycles(fn, clock_mhz):
    """Cycles of spin that outlast the CPU time to enqueue one call (x2, at least 20 us)."""
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    enqueue_s = (time.perf_counter() - t0) / 3
    torch.cuda.synchronize()
    return int(max(2 * enqueue_s, 20e-6) * (clock_mhz or 2000) * 1e6)


class CuptiMarks:
    """Markers on CUPTI's clock through the injection library, if loaded."""

    def __init__(self, offset=0):
        self.lib = None
        self.offset = offset  # records before it belong to earlier requests of a worker
        self._records = None  # (file size, kernels, markers): parsed once per flush, not per question
        path = os.environ.get("CUDA_INJECTION64_PATH", "")
        self.jsonl = os.environ.get("MAGPIE_CUPTI_OUTPUT", "")
        if path.endswith("libmagpie_cupti.so") and os.path.exists(path) and self.jsonl:
            try:
                lib = ctypes.CDLL(path)  # the driver already loaded it: same handle
                lib.magpie_cupti_mark.argtypes = [ctypes.c_char_p]
                self.lib = lib
            except OSError:
                self.lib = None

    def mark(self, label):
        if self.lib is not None:
            self.lib.magpie_cupti_mark(label.encode())

    def records(self, flush=True):
        """Kernels and markers written since `offset`; the file is re-read only when it grew."""
        if flush:
            self.lib.magpie_cupti_flush()
        size = os.path.getsize(self.jsonl) if os.path.exists(self.jsonl) else 0
        if self._records is None or self._records[0] != size:
            self._records = (size,) + read_jsonl(self.jsonl, self.offset)
        return self._records[1], self._records[2]

    def kernels_in(self, prefix, n):
        """Per-sample union ns and kernel names, for markers prefix+'s<i>' / prefix+'e<i>'."""
        if self.lib is None:
            return None
        kernels, markers = self.records()
        kernels = [k for k in kernels if SPIN_KERNEL not in k.get("name", "")]
        ts = {m["marker"]: m["ts"] for m in markers}
        windows = []
        for i in range(n):
            s, e = ts.get("%ss%d" % (prefix, i)), ts.get("%se%d" % (prefix, i))
            if s is None or e is None:
                return None
            windows.append((s, e))
        return window_unions(kernels, windows)

    def kernels_in_labels(self, labels):
        """Union ns and names for windows marked label+'s' / label+'e'."""
        if self.lib is None or not labels:
            return []
        kernels, markers = self.records()
        kernels = [k for k in kernels if SPIN_KERNEL not in k.get("name", "")]
        ts = {m["marker"]: m["ts"] for m in markers}
        windows = [(ts[l + "s"], ts[l + "e"]) for l in labels if l + "s" in ts and l + "e" in ts]
        return window_unions(kernels, windows)

    def unjoined_side_work(self, prefix, n):
        """A sentence when some timed window has work the caller's stream did not wait for, else None."""
        if self.lib is None:
            return None
        kernels, markers = self.records(flush=False)
        ts = {m["marker"]: m["ts"] for m in markers}
        windows = [(ts.get("%ss%d" % (prefix, i)), ts.get("%se%d" % (prefix, i))) for i in range(n)]
        found = unjoined_work(kernels, [w for w in windows if None not in w], SPIN_KERNEL)
        if not found:
            return None
        hit, name, late_ns = found
        return ("in %d of %d timed windows, kernel %s on another stream was still running %.1f us after the "
                "caller's stream had moved past the call: the output is not ready for a consumer on the "
                "caller's stream (join the side stream before returning)" % (hit, len(windows), name, late_ns / 1e3))


class ClockMonitor:
    """SM clock via NVML; None when NVML is missing."""

    def __init__(self, device_index):
        self.handle = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self.max_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
        except Exception:  # noqa: BLE001 - any NVML failure means "no throttle check"
            self.handle = None

    def sm_mhz(self):
        if self.handle is None:
            return None
        try:
            return self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        except Exception:  # noqa: BLE001
            return None


def time_callable(fn, max_noise=0.005, min_samples=10, min_time_s=0.5, max_time_s=15.0, warmup=5,
                  l2_flush=True, throttle_fraction=0.75, integrity=None, marks_from=0):
    """Samples of fn's GPU time. `integrity` (an integrity.Integrity) gets its spot
    checks run between samples at its positions, and one after the last sample.
    `marks_from`: where this call's records start in the CUPTI file (a worker's holds earlier calls)."""
    if not torch.cuda.is_available():
        return {"error": "timing needs a CUDA GPU (torch.cuda.is_available() is False)"}
    dev = torch.cuda.current_device()
    for _ in range(max(1, warmup)):
        fn()
    torch.cuda.synchronize()
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    # Read 2x L2 before each sample. float32: torch's int32 sum (int64 accumulator) took 203 us
    # on an H100 for what a float32 sum reads in 49 us, with the same eviction.
    flush_buf = torch.ones(max(2 * l2, 1 << 20) // 4, dtype=torch.float32, device="cuda") if l2_flush else None
    marks, clock = CuptiMarks(marks_from), ClockMonitor(dev)
    if integrity is not None:
        integrity.marks = marks
    can_spin = hasattr(torch.cuda, "_sleep")
    cycles = spin_cycles(fn, getattr(clock, "max_mhz", None)) if can_spin else 0
    crit = StdRelCriterion(max_noise, min_samples, min_time_s, max_time_s)
    start_ev, stop_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    event_ms, clocks, kept = [], [], []
    t0 = time.perf_counter()
    i = 0
    spots = 0
    while True:
        if integrity is not None and integrity.due(i):
            integrity.spot(spots)  # outside every timed window
            spots += 1
        if flush_buf is not None:
            flush_buf.sum()
        torch.cuda.synchronize()
        marks.mark("ms%d" % i)
        if can_spin:
            torch.cuda._sleep(cycles)
        start_ev.record()
        fn()
        stop_ev.record()
        if can_spin:
            torch.cuda._sleep(1)  # marks on CUPTI's clock where the caller's stream got past the call
        torch.cuda.synchronize()
        marks.mark("me%d" % i)
        ms = start_ev.elapsed_time(stop_ev)
        mhz = clock.sm_mhz()
        event_ms.append(ms)
        clocks.append(mhz)
        throttled = mhz is not None and clock.max_mhz and mhz < throttle_fraction * clock.max_mhz
        if not throttled:
            kept.append(ms / 1e3)
        i += 1
        if crit.should_stop(kept, sum(kept), time.perf_counter() - t0):
            break
    if integrity is not None:
        integrity.spot(spots)
    t_loop = time.perf_counter()
    keep = [not (c is not None and clock.max_mhz and c < throttle_fraction * clock.max_mhz) for c in clocks]
    result = {"stopped_by": crit.reason, "taken": len(event_ms), "throttled_discarded": keep.count(False),
              "l2_flush_bytes": 0 if flush_buf is None else 4 * flush_buf.numel(),
              "spin_cycles": cycles,
              "throttle_check": "nvml" if clock.handle is not None else "unavailable",
              "sm_clock_max_mhz": getattr(clock, "max_mhz", None)}
    samples = [ms for ms, k in zip(event_ms, keep) if k]
    mode = "events"
    cupti = marks.kernels_in("m", len(event_ms))
    if cupti is not None:
        union_ms = [u / 1e6 for (u, _), k in zip(cupti, keep) if k]
        names = sorted({n for _, ns in cupti for n in ns})
        ev_med, cu_med = statistics.median(samples), statistics.median(union_ms)
        ratio = cu_med / ev_med if ev_med > 0 else 0.0
        result["crosscheck"] = {"events_median_ms": ev_med, "cupti_union_median_ms": cu_med,
                                "ratio": ratio, "kernels": names}
        if ratio > 1.05:
            result["crosscheck"]["warning"] = ("CUPTI saw %.1f%% more kernel time than the CUDA events: work ran "
                                               "outside the timed stream" % (100 * (ratio - 1)))
        samples, mode = union_ms, "cupti_union"
    else:
        result["crosscheck"] = {"warning": "libmagpie_cupti.so not loaded: events not cross-checked"}
    if integrity is not None:
        fresh_union, unjoined = None, None
        if cupti is not None:
            fresh_union = [u / 1e6 for u, _ in marks.kernels_in_labels(integrity.fresh_marks)]
            unjoined = marks.unjoined_side_work("m", len(event_ms))
        result["integrity"] = integrity.finish(statistics.median(samples) if samples else 0.0, fresh_union,
                                               unjoined)
    result["mode"] = mode
    # Where this request's wall time went: the loop (GPU work, syncs, flushes,
    # spot checks) and the CUPTI analysis after it.
    result["harness_s"] = {"sampling": t_loop - t0, "analysis": time.perf_counter() - t_loop,
                           "per_sample_us": 1e6 * (t_loop - t0) / max(1, len(event_ms))}
    result["samples_ms"] = samples
    result["noise"] = rel_stddev(samples)
    return result


def json_safe(x):
    """NaN and Infinity are not JSON (a strict reader rejects the whole line): they become null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def latency_payload(result):
    """The MAGPIE_LATENCY_JSON payload (docs/MAGPIE_COMPATIBILITY.md §8) for a time_callable result,
    strict JSON (json_safe)."""
    if "error" in result:
        return {"error": result["error"]}
    return json_safe(_latency_payload(result))


def _latency_payload(result):
    s = sorted(result["samples_ms"])
    n = len(s)
    p99 = s[min(n - 1, int(round(0.99 * (n - 1))))]
    return {"mode": result["mode"],
            "stats": {"median_ms": statistics.median(s), "p50_ms": statistics.median(s), "p99_ms": p99,
                      "min_ms": s[0], "max_ms": s[-1], "std_ms": statistics.stdev(s) if n > 1 else 0.0,
                      "samples_ms": s if n <= 5000 else s[:: n // 5000 + 1], "n_repeat": n, "n_retries": 0,
                      "estimate_ms": statistics.median(s)},
            "kernel_name": ",".join(result.get("crosscheck", {}).get("kernels", []))[:500],
            "stopped_by": result["stopped_by"], "noise": result["noise"],
            "integrity": result.get("integrity"),
            "throttled_discarded": result["throttled_discarded"], "crosscheck": result.get("crosscheck"),
            "harness_s": result.get("harness_s")}
