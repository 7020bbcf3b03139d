"""Default tolerances per dtype: |out - ref| <= atol + rtol * |ref|.

Looser than torch.testing's same-op defaults because a rewritten kernel may
sum in another order; documented in docs/KERNEL_EVALUATION.md.
"""

# dtype name (as str(torch.dtype) without the "torch." prefix) -> (rtol, atol)
DEFAULT_TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float8_e4m3fn": (1.25e-1, 6.25e-2),
    "float8_e5m2": (2.5e-1, 1.25e-1),
}
EXACT = (0.0, 0.0)


def tolerance_for(dtype_name, rtol=None, atol=None):
    """(rtol, atol) for a dtype; explicit values win. Integers and bools are exact."""
    name = dtype_name.replace("torch.", "")
    base = DEFAULT_TOLERANCES.get(name, EXACT)
    return (base[0] if rtol is None else rtol, base[1] if atol is None else atol)
