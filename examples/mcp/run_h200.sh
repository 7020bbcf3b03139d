#!/usr/bin/env bash
# The second wave's GPU checks on a CUDA machine, from the repository root, with
# the magpie binary and its libraries in .kbin/ (examples/kernels/validation/
# prepare_kbin.sh) and the MCP SDK's wheels in .whl/ (docs/GPU_VALIDATION.md
# says how they were fetched): `magpie --gpu-info` against nvidia-smi, then an
# MCP session (hardware_spec, analyze, compare) through the official client.
# Logs go to $OUT.
set -u
OUTDIR=${OUT:-/tmp/magpie_h200_out}
RES=/tmp/magpie_results
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/h200_session.log") 2>&1
source examples/kernels/validation/device_env.sh

step environment
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.max.sm --format=csv
$M --version || { echo "magpie binary does not run here"; ldd $M; exit 1; }

step "magpie --gpu-info (text, then JSON checked against nvidia-smi)"
$M --gpu-info
bash examples/gpu/validate_gpu_info.sh $M

step build libmagpie_cupti.so
build_cupti_lib /tmp/libmagpie_cupti.so
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python
export MAGPIE_RESULTS_DB=$RES/results.db

step "MCP session over stdio with the official Python SDK"
python3 -c 'import mcp, jsonschema; print("mcp", mcp.__version__ if hasattr(mcp, "__version__") else "?")'
PYTHONUNBUFFERED=1 timeout 500 python3 examples/mcp/h200_session.py $M "$OUTDIR/mcp"
echo "exit=$?"
step "results store after the session"
$M results list --limit 10
