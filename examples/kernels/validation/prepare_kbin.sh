#!/usr/bin/env bash
# Packs the magpie binary built here (Debian 12) with the shared libraries it
# links, into .kbin/ (git-ignored locally), for the GPU machine: run_h200.sh
# drops the libraries that machine already has.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${1:-build/apps/magpie/magpie}
rm -rf .kbin && mkdir -p .kbin/lib
strip -o .kbin/magpie "$BIN"
ldd "$BIN" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+)\.so' |
  while read -r lib; do cp -L "$lib" .kbin/lib/; done
du -sh .kbin
