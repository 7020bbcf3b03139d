# Sourced (from the repository root) by the GPU scripts in this folder: the
# libraries carried in .kbin/, CUDA and ncu on PATH, and helpers. Needs RES
# (where magpie writes) for run(); sets ROOT, V, CUDA and M.
ROOT=$(pwd)
V=$ROOT/examples/kernels/validation
M=$ROOT/.kbin/magpie
# Carried libraries: keep only the ones this machine lacks (torch must keep its own).
for f in .kbin/lib/*; do [ -e "$f" ] && ldconfig -p | grep -q " $(basename "$f") " && rm -f "$f"; done
export LD_LIBRARY_PATH=$ROOT/.kbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA=/usr/local/cuda; [ -d $CUDA ] || CUDA=$(ls -d /usr/local/cuda-1* | head -1)
export PATH=$CUDA/bin:$PATH
command -v ncu >/dev/null || export PATH=$PATH:$(dirname "$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)")

step() { echo; echo "===== $* ($(date +%T))"; }
run() { step "magpie $*"; timeout 300 $M -v "$@" -o $RES; echo "exit=$?"; }

# build_cupti_lib OUT.so: libmagpie_cupti.so against this machine's CUPTI.
build_cupti_lib() {
  local inc lib
  inc=$(dirname "$(find -L $CUDA/ -name cupti.h | head -1)")
  lib=$(dirname "$(find -L $CUDA/ -name 'libcupti.so' | head -1)")
  g++ -std=c++17 -O2 -shared -fPIC -fvisibility=hidden -I"$inc" -I$CUDA/include src/profiler/cupti/magpie_cupti.cpp \
    -L"$lib" -lcupti -Wl,-rpath,"$lib" -o "$1"
}
