#!/usr/bin/env bash
# Installs Magpie's build and test dependencies from Debian 12 packages.
# Safe to re-run; does nothing when everything is already present.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config clang
  libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libfmt-dev libspdlog-dev
  libboost1.81-dev libboost-url1.81-dev
  libisal-dev zlib1g-dev libhyperscan-dev libre2-dev
  libxlsxwriter-dev libsqlite3-dev libpq-dev
  libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  postgresql-15  # server binaries for tests/e2e/test_results_postgres.py (skips without)
  python3 python3-venv python3-pip python3-pytest
  libjs-chart.js chromium
  docker.io
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# CMake runs the Python suites with the first python3 on PATH, which need not
# be Debian's (pyenv, a venv): give that one pytest too.
if ! python3 -c "import pytest" 2>/dev/null; then
  echo "install-deps: installing pytest for $(command -v python3)"
  python3 -m pip install -q pytest
fi
echo "install-deps: ok"
