#!/bin/bash
# The GPU checks in one go, for a machine with a CUDA GPU (about 4.5 minutes on an H200, from its steps' times):
#   1. the GPU tests (tests/surface/test_job_gpu.py): a GPU surface against the CPU's in float32 and
#      float64, a rerun bit for bit, K points per pass against one, bfloat16 with its error at the
#      centre, auto's recorded settings giving its bits again, and ranks sharing one GPU refused
#      unless allowed (then equal to one rank bit for bit; needs an MPI launcher, else skipped);
#   2. ResNet-56 on 10,000 CIFAR-format images on an 11x11 grid: points/s against the GPU roofline
#      (the bare forward passes over data already on the GPU, at the best batch and points per pass
#      of a sweep), auto against the reference settings, and three points evaluated again on the CPU;
#   3. two epochs of `landscape train` of ResNet-20 on the GPU (data and augmentation on the GPU).
# Each step runs to its end even if one before failed; the exit status says whether all passed.
# Paste what it prints into BENCHMARKS.md, with the date.
#
#   scripts/gpu_check.sh            (from the repository, with the venv's python first on PATH,
#                                    or PY=/path/to/python; GPU_CHECK_COMPILE=1 adds --compiled: the compiled roofline and kernel)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python}
failed=()
step() {  # step NAME SECONDS COMMAND...: run it with a time limit, note a failure, go on
  local name=$1 limit=$2
  shift 2
  echo "== $name ($(date -u +%H:%M:%S))"
  local started=$SECONDS
  timeout --kill-after=10 "$limit" "$@" || failed+=("$name (exit $?)")
  echo "== $name took $((SECONDS - started)) s"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$PY - "$work" <<'PYEOF'
import sys
sys.path.insert(0, "scripts")
from bench_roofline import cifar_folder
cifar_folder(sys.argv[1] + "/cifar", 10000)
PYEOF
step "GPU tests" 240 $PY -m pytest -q -p no:cacheprovider -m gpu tests/surface/test_job_gpu.py -rs --durations=8
step "ResNet-56 benchmark" 300 $PY scripts/bench_roofline.py --model resnet56 --cifar_folder "$work/cifar" \
  --grid=-1:1:11 --ranks 1 --repeats 1 --device cuda --threads 4 --check_cpu 3 \
  ${GPU_CHECK_COMPILE:+--compiled}
step "GPU training" 120 $PY -m landscape train --model resnet20 --dataset cifar10 --datapath "$work/cifar" \
  --batch_size 128 --recipe linear --epochs 2 --device cuda --out "$work/train_gpu"
if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all GPU checks passed"
