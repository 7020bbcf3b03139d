"""Timing-integrity spot checks on CPU tensors (the GPU-only rules — CUPTI
windows, unjoined side streams — ran on the H200: docs/GPU_VALIDATION.md).
Each cheat below passes a per-seed correctness check on fresh inputs; the spot
checks must catch it by its rule, and honest implementations must pass clean.
Skipped where torch is missing (CI's system Python); tests/e2e/
test_harness_torch_cpu.py runs this file with the serving venv, which has torch."""
import pytest

torch = pytest.importorskip("torch")

from magpie_bench.check import check  # noqa: E402
from magpie_bench.integrity import Integrity  # noqa: E402

CPU = torch.device("cpu")


def get_inputs():
    return [torch.randn(256, 128)]


def baseline(x):
    return torch.softmax(x, dim=-1)


def run_spots(impl, reference=baseline, spots=3, calls_between=2):
    """The timing loop's use of Integrity, without the GPU timer: calls, spot, calls..."""
    torch.manual_seed(42)
    inputs = get_inputs()
    integ = Integrity(impl, inputs, get_inputs, reference, seed=42, spots=spots, horizon=spots, device=CPU)
    for j in range(spots + 1):
        for _ in range(calls_between):
            impl(*inputs)
        integ.spot(j)
    return integ.finish(timed_median_ms=1.0)


def rules(block):
    return {v["rule"] for v in block["violations"]}


class AddressCache:
    """Caches the result by input address: correct on fresh tensors, stale when a tensor is refilled.
    The cache keeps each keyed input alive, so the allocator cannot hand a later fresh tensor the same
    address (which made the correctness premise depend on the allocator: CI saw seed 3 reuse seed 1's)."""

    def __init__(self):
        self.cache = {}

    def __call__(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.cache:
            self.cache[key] = (x, torch.softmax(x, dim=-1))
        return self.cache[key][1]


class PreviousOutput:
    """Computes on the first call of each new input object, afterwards hands back the last output."""

    def __init__(self):
        self.last, self.seen = None, None

    def __call__(self, x):
        if self.seen is not x:
            self.seen, self.last = x, torch.softmax(x, dim=-1)
        return self.last


class HalfWritten:
    """One reused output buffer: fully written for a new input object, only its first half when the
    same input comes back (as in a timing loop)."""

    def __init__(self):
        self.buf, self.seen = None, None

    def __call__(self, x):
        if self.seen is not x or self.buf is None:
            self.seen, self.buf = x, torch.softmax(x, dim=-1)
            return self.buf
        h = x.shape[0] // 2
        self.buf[:h] = torch.softmax(x[:h], dim=-1)
        return self.buf


def in_place(x):
    """Writes the result over its input and returns it."""
    return x.copy_(torch.softmax(x, dim=-1))


def test_cheats_pass_correctness_but_not_the_spot_checks():
    for cheat in (AddressCache(), PreviousOutput(), HalfWritten()):
        r = check(cheat, get_inputs, baseline, seeds=[1, 2, 3], device=CPU)
        assert r["success"], (type(cheat).__name__, r["errors"])
        block = run_spots(cheat)
        assert "timed output differs from a fresh computation" in rules(block), (type(cheat).__name__, block)


def test_in_place_output_is_an_aliasing_violation():
    block = run_spots(in_place)
    assert "output aliases an input" in rules(block), block


def test_persistent_buffer_is_noted_not_rejected():
    buf = {}

    def into_buffer(x):  # honest: recomputes everything into one reused buffer
        out = buf.setdefault("o", torch.empty_like(x))
        torch.softmax(x, dim=-1, out=out)
        return out
    block = run_spots(into_buffer)
    assert not block["violations"], block["violations"]
    assert any("persistent output buffer" in w for w in block["warnings"])


def test_honest_implementations_pass_clean():
    for honest in (baseline, lambda x: torch.exp(x - x.amax(-1, keepdim=True)) /
                   torch.exp(x - x.amax(-1, keepdim=True)).sum(-1, keepdim=True)):
        block = run_spots(honest)
        assert not block["violations"] and not block["warnings"], block
        assert block["spot_checks"] == 4 and all(s["ok"] for s in block["spots"])


def test_without_a_baseline_the_implementation_is_its_own_reference():
    block = run_spots(AddressCache(), reference=None)
    assert block["reference"] == "self on fresh inputs"
    assert "timed output differs from a fresh computation" in rules(block)


def test_skipped_work_rule_compares_timed_and_fresh_medians():
    integ = Integrity(baseline, get_inputs(), get_inputs, baseline, device=CPU)
    ok = integ.finish(timed_median_ms=0.9, fresh_union_ms=[1.0, 1.1, 0.95])
    assert not ok["violations"]
    integ = Integrity(baseline, get_inputs(), get_inputs, baseline, device=CPU)
    bad = integ.finish(timed_median_ms=0.01, fresh_union_ms=[1.0, 1.1, 0.95])
    assert rules(bad) == {"far less GPU work than a fresh call"}
