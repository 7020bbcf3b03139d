"""The correctness check on CPU tensors; skipped where torch is not installed
(CI's image has none; the same code ran on the H200, docs/GPU_VALIDATION.md)."""
import pytest

torch = pytest.importorskip("torch")

from magpie_bench.check import check, compare_tensor  # noqa: E402


def get_inputs():
    return [torch.randn(64, 32)]


def reference(x):
    return torch.softmax(x, dim=-1)


def test_same_function_passes_on_every_seed():
    r = check(lambda x: torch.exp(x) / torch.exp(x).sum(-1, keepdim=True), get_inputs, reference,
              seeds=[1, 2, 3], device=torch.device("cpu"))
    assert r["success"], r["errors"]
    assert len(r["checks"]) == 3 and not r["finiteness_only"]


def test_mutating_inputs_is_caught():
    def mutating(x):
        x.sub_(1.0)
        return torch.softmax(x + 1.0, dim=-1)
    r = check(mutating, get_inputs, reference, seeds=[1], device=torch.device("cpu"))
    assert not r["success"]
    assert any("modified input 0 in place" in e for e in r["errors"])


def test_wrong_values_and_nans_are_counted():
    r = check(lambda x: torch.exp(x), get_inputs, reference, seeds=[1], device=torch.device("cpu"))
    assert not r["success"]
    out = torch.tensor([1.0, float("nan"), float("inf")])
    ref = torch.tensor([1.0, 2.0, float("inf")])
    c = compare_tensor(out, ref, 1e-4, 1e-5, equal_nan=False)
    assert not c["ok"] and c["nan_out"] == 1 and c["inf_out"] == 1 and c["mismatches"] == 1
    assert compare_tensor(out, out.clone(), 1e-4, 1e-5, equal_nan=True)["ok"]


def test_without_baseline_only_finiteness():
    r = check(lambda x: x / 0.0, get_inputs, None, seeds=[1], device=torch.device("cpu"))
    assert r["finiteness_only"] and not r["success"]
    assert "no baseline" in r["scope"]


def test_bf16_uses_looser_default_tolerance():
    x = torch.randn(256)
    c = compare_tensor((x * 1.01).bfloat16(), x.bfloat16(), 2e-2, 1e-2, equal_nan=False)
    assert c["ok"]
