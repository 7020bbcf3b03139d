#!/usr/bin/env bash
# Checks `magpie --gpu-info --json` field by field against nvidia-smi on a
# machine with an NVIDIA GPU. Strings and fixed numbers must match exactly;
# values that move between two reads (free memory, current clocks, temperature,
# power draw) must agree within a tolerance. Prints a table; exits 1 on any
# mismatch, 2 when it cannot run (no nvidia-smi, no python3, magpie failed).
#
# Usage: examples/gpu/validate_gpu_info.sh path/to/magpie
#   built on the GPU machine:  cmake --preset release
#                              cmake --build --preset release --target magpie
#                              examples/gpu/validate_gpu_info.sh build/apps/magpie/magpie
#   built elsewhere and carried with its libraries
#   (examples/kernels/validation/prepare_kbin.sh → .kbin/magpie, .kbin/lib/):
#                              examples/gpu/validate_gpu_info.sh .kbin/magpie
# Needs bash, python3 and nvidia-smi; reads nothing else from the checkout.
set -euo pipefail

magpie=${1:?usage: $0 path/to/magpie}
[[ -x "$magpie" ]] || { echo "not an executable: $magpie" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found: this check needs an NVIDIA GPU" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 2; }
if [[ -d "$(dirname "$magpie")/lib" ]]; then
  export LD_LIBRARY_PATH="$(cd "$(dirname "$magpie")/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fields=name,uuid,pci.bus_id,compute_cap,memory.total,memory.free,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,driver_version,mig.mode.current,ecc.mode.current,pcie.link.gen.current,pcie.link.width.current
extra_fields=pcie.link.gen.max,pcie.link.width.max,power.draw

# nvidia-smi just before and just after magpie: a value that moves (a clock, the
# temperature) passes when magpie's reading lies between the two, give or take the tolerance.
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits >"$work/smi_before.csv"
"$magpie" --gpu-info --json >"$work/magpie.json" || { echo "magpie --gpu-info --json failed" >&2; exit 2; }
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits >"$work/smi.csv"
nvidia-smi --query-gpu=$extra_fields --format=csv,noheader,nounits >"$work/smi_extra.csv" 2>/dev/null || : >"$work/smi_extra.csv"
nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1 >"$work/smi_cuda.txt" || true

echo "== magpie --gpu-info"
"$magpie" --gpu-info || true
echo

python3 - "$work" "$fields" "$extra_fields" <<'PY'
import csv, json, sys
from pathlib import Path

work, fields, extra_fields = Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3].split(",")
magpie = json.loads((work / "magpie.json").read_text())
def read_csv(name):
    return [r for r in csv.reader((work / name).read_text().splitlines(), skipinitialspace=True) if r]

rows, before, extra = read_csv("smi.csv"), read_csv("smi_before.csv"), read_csv("smi_extra.csv")
smi_cuda = (work / "smi_cuda.txt").read_text().strip()
MIB = 1024 * 1024

def unavailable(v):
    return v is None or v.strip() in ("", "[N/A]", "N/A", "[Not Supported]", "Not Supported")

def as_int(v): return int(float(v))
def mode(v): return {"enabled": True, "disabled": False}.get(v.strip().lower())

# nvidia-smi field -> (magpie value from a device, parse nvidia-smi text, rule)
# rule: ("exact",) or ("abs", tolerance) or ("rel_abs", fraction, floor)
def checks(d):
    return [
        ("name", d["name"], str, ("exact",)),
        ("uuid", d["uuid"], str, ("exact",)),
        ("pci.bus_id", d["pci_bus_id"], str, ("exact",)),
        ("compute_cap", d["compute_capability"], str, ("exact",)),
        ("memory.total", None if d["memory_total_bytes"] is None else d["memory_total_bytes"] // MIB, as_int, ("exact",)),
        ("memory.free", None if d["memory_free_bytes"] is None else d["memory_free_bytes"] // MIB, as_int, ("abs", 256)),
        ("clocks.sm", d["sm_clock_mhz"], as_int, ("rel_abs", 0.10, 60)),
        ("clocks.mem", d["mem_clock_mhz"], as_int, ("rel_abs", 0.10, 60)),
        ("clocks.max.sm", d["max_sm_clock_mhz"], as_int, ("exact",)),
        ("clocks.max.mem", d["max_mem_clock_mhz"], as_int, ("exact",)),
        ("power.limit", d["power_limit_w"], float, ("abs", 0.5)),
        ("temperature.gpu", d["temperature_c"], as_int, ("abs", 3)),
        ("driver_version", magpie["driver_version"], str, ("exact",)),
        ("mig.mode.current", d["mig_enabled"], mode, ("exact",)),
        ("ecc.mode.current", d["ecc_enabled"], mode, ("exact",)),
        ("pcie.link.gen.current", d["pcie"]["gen"], as_int, ("exact",)),
        ("pcie.link.width.current", d["pcie"]["width"], as_int, ("exact",)),
        ("pcie.link.gen.max", d["pcie"]["max_gen"], as_int, ("exact",)),
        ("pcie.link.width.max", d["pcie"]["max_width"], as_int, ("exact",)),
        ("power.draw", d["power_draw_w"], float, ("rel_abs", 0.25, 25.0)),
    ]

def agree(ours, readings, rule):
    """Exact: equal to one of the readings (nvidia-smi before and after magpie; a
    PCIe link can retrain between them). Otherwise within the tolerance of the
    interval the readings span."""
    if rule[0] == "exact":
        return ours in readings
    lo, hi = min(map(float, readings)), max(map(float, readings))
    tol = rule[1] if rule[0] == "abs" else max(rule[2], rule[1] * hi)
    return lo - tol <= float(ours) <= hi + tol

def rule_text(rule):
    if rule[0] == "abs":
        return f"±{rule[1]}"
    if rule[0] == "rel_abs":
        return f"±max({rule[2]}, {rule[1] * 100:.0f}%)"
    return "exact"

table, failures = [], 0
devices = magpie["devices"]
if len(devices) != len(rows):
    print(f"MISMATCH: magpie lists {len(devices)} GPU(s), nvidia-smi {len(rows)}")
    failures += 1
for i, d in enumerate(devices[: len(rows)]):
    smi = dict(zip(fields, rows[i]))
    smi_before = dict(zip(fields, before[i])) if i < len(before) else {}
    if i < len(extra):
        smi.update(dict(zip(extra_fields, extra[i])))
    for field, ours, parse, rule in checks(d):
        if field not in smi:
            table.append((i, field, ours, "(not queried)", rule_text(rule), "skip"))
            continue
        raw = smi[field]
        if unavailable(raw):
            ok = ours is None
            table.append((i, field, ours, raw, rule_text(rule), "ok (both n/a)" if ok else "MISMATCH"))
        else:
            readings = [parse(raw)]
            shown = raw
            earlier = smi_before.get(field)
            if earlier is not None and not unavailable(earlier):
                readings.append(parse(earlier))
                if earlier != raw:
                    shown = f"{earlier} -> {raw}"
            ok = ours is not None and agree(ours, readings, rule)
            table.append((i, field, ours, shown, rule_text(rule), "ok" if ok else "MISMATCH"))
        failures += 0 if ok else 1
    # No nvidia-smi field: the CUDA driver's SM count must at least be known.
    ok = isinstance(d["sm_count"], int) and d["sm_count"] > 0
    table.append((i, "sm_count (CUDA driver)", d["sm_count"], "-", "> 0", "ok" if ok else "MISMATCH"))
    failures += 0 if ok else 1
if smi_cuda:
    ok = magpie["cuda_version"] == smi_cuda
    table.append(("-", "CUDA Version (header)", magpie["cuda_version"], smi_cuda, "exact", "ok" if ok else "MISMATCH"))
    failures += 0 if ok else 1
arch_ok = bool(devices) and magpie["architecture"] == "sm_" + str(devices[0]["compute_capability"]).replace(".", "")
table.append(("-", "architecture", magpie["architecture"], "from compute_cap", "exact", "ok" if arch_ok else "MISMATCH"))
failures += 0 if arch_ok else 1

header = ("gpu", "field", "magpie", "nvidia-smi", "rule", "verdict")
cells = [header] + [tuple("null" if c is None else str(c) for c in row) for row in table]
widths = [max(len(r[k]) for r in cells) for k in range(len(header))]
for n, r in enumerate(cells):
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if n == 0:
        print("  ".join("-" * w for w in widths))
print()
if not devices:
    print("magpie found no GPU (its notes below say why)")
for note in magpie["notes"]:
    print("magpie note: " + note)
checked = sum(1 for r in table if r[-1] != "skip")
print(f"{checked - failures} passed, {failures} failed")
sys.exit(1 if failures or not devices else 0)
PY
