#!/usr/bin/env python3
"""Serving-client capacity: magpie's load generator and `vllm bench serve`
side by side against bench/instrument_server (fixed SSE responses streamed as
fast as one core can), in the same run, on 127.0.0.1.

Measures (1) the sustained streamed-request rate at rate=inf with a
concurrency cap, and (2) client-added latency at a fixed target rate:
scheduled→sent and read→record p50/p99 for magpie (vLLM's client
reports neither; its achieved rate against the target is shown instead).

  bench/serving_client_capacity.py --magpie build/apps/magpie/magpie \
      --instrument build/bench/instrument_server --vllm ~/.cache/magpie-e2e/venv/bin/vllm \
      --tokenizer DIR [--requests 20000] [--rate 1000]
Prints a markdown table; --json FILE saves the numbers."""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def start_instrument(binary, tokens):
    proc = subprocess.Popen([binary, "--tokens", str(tokens)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    assert line and line[0] == "port", line
    return proc, f"http://127.0.0.1:{line[1]}"


def magpie_run(args, url, out, rate, conc, n):
    cmd = [args.magpie, "benchmark", "vllm", "--endpoint", url, "--num-prompts", str(n),
           "--concurrency", str(conc), "--request-rate", str(rate), "--input-len", "32",
           "--output-len", str(args.tokens), "--range-ratio", "0", "--warmups", "0", "-o", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(proc.stdout + proc.stderr)
    ws = sorted(Path(out).glob("benchmark_vllm_*"))[-1]
    report = json.loads((ws / "benchmark_report.json").read_text())
    case = report["cases"][0]
    return {"request_throughput": case["throughput"]["request_throughput"],
            "completed": case["throughput"]["completed_requests"],
            "duration_s": case["throughput"]["duration_seconds"], "wall_s": wall,
            "scheduled_to_sent_p50_us": case["client"]["scheduled_to_sent_ms"]["p50"] * 1000,
            "scheduled_to_sent_p99_us": case["client"]["scheduled_to_sent_ms"]["p99"] * 1000,
            "read_to_record_p50_us": case["client"]["read_to_record_ms"]["p50"] * 1000,
            "read_to_record_p99_us": case["client"]["read_to_record_ms"]["p99"] * 1000,
            "ttft_p50_ms": case["latency"]["ttft"]["median_ms"],
            "ttft_p99_ms": case["latency"]["ttft"]["p99_ms"]}


def vllm_run(args, url, out, rate, conc, n):
    cmd = [args.vllm, "bench", "serve", "--backend", "vllm", "--base-url", url, "--model", "instrument",
           "--tokenizer", args.tokenizer, "--dataset-name", "random", "--random-input-len", "32",
           "--random-output-len", str(args.tokens), "--random-range-ratio", "0", "--num-prompts", str(n),
           "--request-rate", str(rate), "--ignore-eos", "--num-warmups", "0", "--disable-tqdm",
           "--save-result", "--result-dir", str(out), "--result-filename", "v.json",
           "--percentile-metrics", "ttft,tpot,itl,e2el"]
    if conc:
        cmd += ["--max-concurrency", str(conc)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(proc.stdout[-3000:] + proc.stderr[-3000:])
    r = json.loads((Path(out) / "v.json").read_text())
    return {"request_throughput": r["request_throughput"], "completed": r["completed"],
            "duration_s": r["duration"], "wall_s": wall, "ttft_p50_ms": r["median_ttft_ms"],
            "ttft_p99_ms": r["p99_ttft_ms"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--magpie", required=True)
    ap.add_argument("--instrument", required=True)
    ap.add_argument("--vllm", required=True)
    ap.add_argument("--tokenizer", required=True, help="a local tokenizer dir for vllm bench serve")
    ap.add_argument("--tokens", type=int, default=16, help="chunks per streamed response")
    ap.add_argument("--requests", type=int, default=20000, help="magpie requests for the saturation run")
    ap.add_argument("--vllm-requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--rate-seconds", type=float, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()
    server, url = start_instrument(args.instrument, args.tokens)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            n_rate = int(args.rate * args.rate_seconds)
            res = {
                "magpie_saturation": magpie_run(args, url, tmp / "m1", "inf", args.concurrency, args.requests),
                "vllm_saturation": vllm_run(args, url, tmp / "v1", "inf", args.concurrency, args.vllm_requests),
                "magpie_at_rate": magpie_run(args, url, tmp / "m2", args.rate, 100000, n_rate),
                "vllm_at_rate": vllm_run(args, url, tmp / "v2", args.rate, 0, n_rate),
            }
    finally:
        server.terminate()
        server.wait()
    res["config"] = {"tokens_per_response": args.tokens, "concurrency": args.concurrency, "rate": args.rate}
    ms, vs = res["magpie_saturation"], res["vllm_saturation"]
    mr, vr = res["magpie_at_rate"], res["vllm_at_rate"]
    print(f"| client | streamed req/s at rate=inf, conc {args.concurrency} | achieved req/s at target "
          f"{args.rate:g} | scheduled→sent p50/p99 (µs) | read→record p50/p99 (µs) | TTFT p50/p99 at target (ms) |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| magpie | {ms['request_throughput']:.0f} | {mr['request_throughput']:.0f} | "
          f"{mr['scheduled_to_sent_p50_us']:.1f} / {mr['scheduled_to_sent_p99_us']:.1f} | "
          f"{mr['read_to_record_p50_us']:.1f} / {mr['read_to_record_p99_us']:.1f} | "
          f"{mr['ttft_p50_ms']:.3f} / {mr['ttft_p99_ms']:.3f} |")
    print(f"| vllm bench serve | {vs['request_throughput']:.0f} | {vr['request_throughput']:.0f} | "
          f"not reported | not reported | {vr['ttft_p50_ms']:.3f} / {vr['ttft_p99_ms']:.3f} |")
    print(f"\nratio (saturation): {ms['request_throughput'] / vs['request_throughput']:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
