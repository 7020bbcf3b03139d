"""A persistent harness worker: one process per implementation for a whole compare.

`python -m magpie_bench worker --target ... --inputs ... --requests FIFO --responses FIFO`
imports the implementation (and the baseline), builds the CUDA context and
compiles once, then serves requests until told to exit. The protocol is one
JSON object per line each way (docs/KERNEL_EVALUATION.md, "Harness worker"):

  -> {"id": 0, "ready": true}                          once started (or "ready": false, "error")
  <- {"id": n, "op": "check", "json": PATH, "seeds": [42, 43, 44]}
  -> {"id": n, "ok": true, "success": bool}            the report is written to PATH, as `check` mode does
  <- {"id": n, "op": "time", "seed": 42, "spot_seed": 42, "cupti_output": PATH or ""}
  -> {"id": n, "ok": true, "latency": {...}}           the MAGPIE_LATENCY_JSON payload
  <- {"id": n, "op": "cupti_kind", "kind": "serial" or "concurrent"}
  -> {"id": n, "ok": true}                             libmagpie_cupti switched in place (ok false: restart me)
  <- {"id": n, "op": "exit"}
  -> {"id": n, "ok": false, "error": "..."}            the request raised; the worker keeps serving

Each request builds its own inputs (fresh per seed, as a new process would);
nothing of one request's inputs or outputs is handed to the next. The
implementation's own output goes to the worker's log (stdout/stderr), never to
the protocol, which has its own FIFOs. A crash or hang ends only this worker:
the caller times each request out and kills the process group.
"""
import json
import os
import shutil
import sys
import traceback


class CuptiSlice:
    """The records libmagpie_cupti.so appends to one file, cut per request: the
    bytes written between its start and end are copied to the request's own file."""

    def __init__(self):
        self.path = os.environ.get("MAGPIE_CUPTI_OUTPUT", "")
        self.loaded = bool(self.path) and os.environ.get("CUDA_INJECTION64_PATH", "").endswith("libmagpie_cupti.so")
        self.start = 0

    def begin(self):
        if self.loaded:
            self._flush()
            self.start = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        return self.start

    def end(self, out_path):
        if not self.loaded or not out_path:
            return
        self._flush()
        with open(self.path, "rb") as src, open(out_path + ".tmp", "wb") as dst:
            src.seek(self.start)
            shutil.copyfileobj(src, dst)
        os.replace(out_path + ".tmp", out_path)

    def _flush(self):
        import ctypes
        try:
            ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).magpie_cupti_flush()
        except (OSError, AttributeError, KeyError):
            pass


class Worker:
    def __init__(self, a):
        from .__main__ import instantiate
        from .loading import load_target
        self.a = a
        self.init = load_target(a.init_inputs, a.target_dir) if a.init_inputs else None
        self.target = instantiate(load_target(a.target, a.target_dir), self.init)
        self.inputs_fn = load_target(a.inputs, a.target_dir)
        self.baseline = instantiate(load_target(a.baseline, a.baseline_dir), self.init) if a.baseline else None
        self.cupti = CuptiSlice()

    def check(self, req):
        from .check import check
        seeds = req.get("seeds") or [self.a.seed + i for i in range(self.a.seeds)]
        out = check(self.target, self.inputs_fn, self.baseline, seeds, self.a.rtol, self.a.atol, self.a.equal_nan)
        for e in out["errors"]:
            print("magpie_bench: " + e)
        print("magpie_bench: correctness %s (%s)" % ("PASSED" if out["success"] else "FAILED", out["scope"]))
        write_json(req["json"], out)
        return {"success": out["success"]}

    def time(self, req):
        from .check import as_list, seed_all
        from .timing import latency_payload, time_callable
        a = self.a
        seed = int(req.get("seed", a.seed))
        self.cupti.begin()
        seed_all(seed)
        inputs = as_list(self.inputs_fn())  # this request's own tensors
        integrity = None
        if not a.no_integrity:
            from .integrity import Integrity
            # A seed per request: spot-check positions and refill values differ between
            # rounds, so a cache filled in one request never matches the next one's checks.
            integrity = Integrity(self.target, inputs, self.inputs_fn, self.baseline,
                                  int(req.get("spot_seed", seed)), a.rtol, a.atol, horizon=max(a.min_samples, 3))
        target = self.target
        out = time_callable(lambda: target(*inputs), a.max_noise, a.min_samples, a.min_time, a.max_time,
                            a.warmup, not a.no_l2_flush, integrity=integrity, marks_from=self.cupti.start)
        del inputs, integrity
        self.cupti.end(req.get("cupti_output", ""))
        return {"latency": latency_payload(out)}


def set_cupti_kind(kind):
    """Switches the injected libmagpie_cupti.so between its kernel activity kinds in this
    process, so a new kind costs no restart (imports, CUDA context, compilation)."""
    import ctypes
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    if not path.endswith("libmagpie_cupti.so") or not os.path.exists(path):
        raise RuntimeError("no libmagpie_cupti.so injected in this worker")
    fn = getattr(ctypes.CDLL(path), "magpie_cupti_set_kind", None)  # the driver's handle: already loaded
    if fn is None:
        raise RuntimeError("%s has no magpie_cupti_set_kind (an older build)" % path)
    fn.argtypes = [ctypes.c_char_p]
    if fn(kind.encode()) != 0:
        raise RuntimeError("libmagpie_cupti could not switch to %r" % kind)
    os.environ["MAGPIE_CUPTI_KIND"] = kind
    return {}


def release_cached_memory():
    """Between requests: the allocator's cached blocks back to the GPU, which the
    other implementations' workers share."""
    import gc
    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - best effort
        pass


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def serve(a):
    # Opened before anything can fail, so the caller always gets an answer.
    requests = open(a.requests, "r")
    responses = open(a.responses, "w")

    def reply(obj):
        responses.write(json.dumps(obj, allow_nan=False) + "\n")
        responses.flush()

    try:
        worker = Worker(a)
    except Exception as exc:  # noqa: BLE001 - the user's import or constructor failed
        traceback.print_exc()
        sys.stdout.flush()
        reply({"id": 0, "ready": False, "error": "%s: %s" % (type(exc).__name__, exc)})
        return 1
    reply({"id": 0, "ready": True})
    for line in requests:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        if op == "exit":
            reply({"id": rid, "ok": True})
            return 0
        try:
            if op == "check":
                result = worker.check(req)
            elif op == "time":
                result = worker.time(req)
            elif op == "cupti_kind":
                result = set_cupti_kind(req.get("kind", ""))
            else:
                raise ValueError("unknown op %r" % op)
            result.update(id=rid, ok=True)
        except Exception as exc:  # noqa: BLE001 - report any failure of the user's code
            traceback.print_exc()
            result = {"id": rid, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        release_cached_memory()
        sys.stdout.flush()
        sys.stderr.flush()
        reply(result)
    return 0
