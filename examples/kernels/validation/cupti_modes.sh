#!/usr/bin/env bash
# Which CUPTI activity kind times kernels without changing them? Runs on a CUDA
# machine from the repository root; output recorded in docs/gpu_validation/.
set -u
source examples/kernels/validation/device_env.sh
T=/tmp/cupti_modes; mkdir -p $T
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
build_cupti_lib $T/libmagpie_cupti.so || exit 1
A=-arch=sm_90
nvcc -O3 $A -o $T/vector_add examples/kernels/vector_add/vector_add.cu &&
nvcc -O3 $A -o $T/vector_add_gs $V/vector_add_gridstride.cu &&
(cd examples/kernels/matmul && nvcc -O3 $A -o $T/matmul matmul_tiled.cu) || exit 1
echo "== vector_add (262144 blocks)"; python3 $V/cupti_modes.py $T/libmagpie_cupti.so 3 '^vector_add\(' $T/vector_add 50
echo "== vector_add grid-stride (8 blocks/SM)"; python3 $V/cupti_modes.py $T/libmagpie_cupti.so 3 'gridstride' $T/vector_add_gs 50
echo "== matmul tiled"; python3 $V/cupti_modes.py $T/libmagpie_cupti.so 2 'matmul' $T/matmul 20
for b in vector_add vector_add_gs; do
  echo "== ncu $b"
  ncu --clock-control none -k regex:vector_add --launch-count 10 --metrics gpu__time_duration.sum --csv $T/$b 10 2>&1 |
    grep gpu__time_duration | awk -F'","' '{print $NF}' | tr -d '"' | tr '\n' ' '; echo
done
echo "== torch workload: none / concurrent / serial, alternating"
for i in 1 2 3; do
  python3 $V/torch_workload.py none
  CUDA_INJECTION64_PATH=$T/libmagpie_cupti.so MAGPIE_CUPTI_OUTPUT=$T/ov.jsonl MAGPIE_CUPTI_KIND=concurrent python3 $V/torch_workload.py concurrent; rm -f $T/ov.jsonl
  CUDA_INJECTION64_PATH=$T/libmagpie_cupti.so MAGPIE_CUPTI_OUTPUT=$T/ov.jsonl MAGPIE_CUPTI_KIND=serial python3 $V/torch_workload.py serial; rm -f $T/ov.jsonl
done
