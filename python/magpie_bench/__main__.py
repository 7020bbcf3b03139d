"""python -m magpie_bench check|time --target MOD:FN --inputs MOD:FN [...] --json OUT
   python -m magpie_bench worker --target MOD:FN --inputs MOD:FN [...] --requests FIFO --responses FIFO (worker.py)"""
import argparse
import json
import sys
import traceback


def parse_args(argv):
    p = argparse.ArgumentParser(prog="magpie_bench", description=__doc__)
    p.add_argument("mode", choices=["check", "time", "worker"])
    p.add_argument("--target", required=True, help="module:callable (a class is instantiated with --init-inputs)")
    p.add_argument("--target-dir", default=None)
    p.add_argument("--inputs", required=True, help="module:function returning the input list")
    p.add_argument("--init-inputs", default=None, help="module:function returning constructor arguments")
    p.add_argument("--baseline", default=None, help="module:callable of the reference implementation")
    p.add_argument("--baseline-dir", default=None)
    p.add_argument("--json", default=None, help="report path (check and time)")
    p.add_argument("--requests", default=None, help="worker: the FIFO its requests come from")
    p.add_argument("--responses", default=None, help="worker: the FIFO its answers go to")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--atol", type=float, default=None)
    p.add_argument("--equal-nan", action="store_true")
    p.add_argument("--max-noise", type=float, default=0.005)
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--max-time", type=float, default=15.0)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--no-l2-flush", action="store_true")
    p.add_argument("--no-integrity", action="store_true",
                   help="skip the timing-integrity spot checks (docs/KERNEL_EVALUATION.md)")
    return p.parse_args(argv)


def instantiate(obj, init):
    import inspect
    import torch
    if inspect.isclass(obj):
        inst = obj(*(init() if init else []))
        if isinstance(inst, torch.nn.Module) and torch.cuda.is_available():
            inst = inst.cuda()
        return inst
    return obj


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.mode == "worker":
        if not (a.requests and a.responses):
            sys.exit("magpie_bench worker: --requests and --responses are required")
        from .worker import serve
        return serve(a)
    if not a.json:
        sys.exit("magpie_bench %s: --json is required" % a.mode)
    from .loading import load_target
    out = {}
    code = 0
    try:
        init = load_target(a.init_inputs, a.target_dir) if a.init_inputs else None
        target = instantiate(load_target(a.target, a.target_dir), init)
        inputs_fn = load_target(a.inputs, a.target_dir)
        if a.mode == "check":
            from .check import check
            baseline = instantiate(load_target(a.baseline, a.baseline_dir), init) if a.baseline else None
            out = check(target, inputs_fn, baseline, [a.seed + i for i in range(a.seeds)], a.rtol, a.atol,
                        a.equal_nan)
            for e in out["errors"]:
                print("magpie_bench: " + e)
            print("magpie_bench: correctness %s (%s)" % ("PASSED" if out["success"] else "FAILED", out["scope"]))
            code = 0 if out["success"] else 1
        else:
            from .check import seed_all
            from .timing import latency_payload, time_callable
            seed_all(a.seed)
            inputs = inputs_fn()
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            integrity = None
            if not a.no_integrity:
                from .integrity import Integrity
                baseline = instantiate(load_target(a.baseline, a.baseline_dir), init) if a.baseline else None
                integrity = Integrity(target, inputs, inputs_fn, baseline, a.seed, a.rtol, a.atol,
                                      horizon=max(a.min_samples, 3))
            out = time_callable(lambda: target(*inputs), a.max_noise, a.min_samples, a.min_time, a.max_time,
                                a.warmup, not a.no_l2_flush, integrity=integrity)
            payload = latency_payload(out)
            print("MAGPIE_LATENCY_JSON: " + json.dumps(payload, allow_nan=False))
            code = 0 if "error" not in payload else 1
    except Exception as exc:  # noqa: BLE001 - report any failure of the user's code
        traceback.print_exc()
        out = {"success": False, "errors": ["%s: %s" % (type(exc).__name__, exc)], "scope": "harness crashed"}
        if a.mode == "time":
            print("MAGPIE_LATENCY_JSON: " + json.dumps({"error": out["errors"][0]}))
        code = 1
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main())
