"""Magpie's built-in harness for `bench_target` implementations.

`python -m magpie_bench check ...` checks a callable against a baseline on
fresh random inputs; `python -m magpie_bench time ...` times it with
nvbench's discipline and prints one `MAGPIE_LATENCY_JSON:` line. The pure
parts (tolerances, stopping rule, interval union) import without torch.
"""
