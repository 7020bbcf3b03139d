#!/usr/bin/env bash
# Several GPUs of one host (nvidia-h200-x2 or larger): the multi-rank steps of the
# multi-GPU validation. Run from the repository root with .kbin/ prepared
# (examples/kernels/validation/prepare_kbin.sh). OUT: where everything lands.
#   1. record one trace per rank (examples/multigpu/record_collectives.py, NCCL, NVLink
#      multicast off) → $OUT/multirank_h200 (copy into tests/data/multirank_h200 to run
#      tests/e2e/test_multirank_collectives.py on it)
#   2. gap analysis and the collective report over the rank files
#   3. the largest all_reduce's bus bandwidth against CUDA events (in cuda_events_rank*.json)
#   4. --gpu-info for every GPU against nvidia-smi
set -u
OUT=${OUT:?set OUT}
RES=$OUT/scratch
mkdir -p "$OUT" "$RES"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source examples/kernels/validation/device_env.sh
step environment
nvidia-smi --query-gpu=index,name,uuid,driver_version,pci.bus_id --format=csv
nvidia-smi topo -m
python3 -c 'import torch; print("torch", torch.__version__, "GPUs", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'

step "1. record"
timeout ${RECORD_BUDGET:-240} python3 examples/multigpu/record_collectives.py "$OUT/multirank_h200" --sizes-mib ${SIZES:-1,16,256}
echo "record exit=$?"
cp examples/multigpu/record_collectives.py "$OUT/multirank_h200/"
ls -la "$OUT/multirank_h200"
cat "$OUT"/multirank_h200/cuda_events_rank0.json

step "2. gap analysis and the collective report"
ranks=$OUT/multirank_h200_traces
mkdir -p "$ranks" && cp "$OUT"/multirank_h200/rank*.pt.trace.json.gz "$ranks/"
timeout 300 $M benchmark --trace-dir "$ranks" -o "$OUT/gap"; echo "gap exit=$?"
timeout 300 $M tracelens "$ranks" --mode pytorch -o "$OUT/tl"; echo "tracelens exit=$?"
for f in collective_summary collective_ranks; do
  echo "--- $f.csv"; cat "$OUT/tl/tracelens/collective_report/$f.csv"
done

step "4. --gpu-info"
bash examples/gpu/validate_gpu_info.sh $M; echo "gpu_info exit=$?"
rm -rf "$RES"
