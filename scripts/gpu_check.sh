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
# The whole script ends within 8 minutes whatever happens: each step has a time limit, and no step
# runs past a budget of 465 s from the start (GPU_CHECK_SECONDS; the set-up commands before the steps
# have time limits too and count against it), so a device lent for 15 minutes
# has time for a second try.  Paste what it prints into BENCHMARKS.md, with the date.
#
#   scripts/gpu_check.sh            (from the repository, with the venv's python first on PATH,
#                                    or PY=/path/to/python; GPU_CHECK_COMPILE=1 adds --compiled: the compiled roofline and kernel)
#   GPU_CHECK_SMOKE=1 scripts/gpu_check.sh   the same steps on the CPU at toy sizes, in a minute or two:
#                                    checks the script's commands still run (the slow tier does so)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python}
BUDGET=${GPU_CHECK_SECONDS:-465}
if [ -n "${GPU_CHECK_SMOKE:-}" ]; then
  device=cpu images=200 grid=-1:1:2 model=resnet20 epochs=1 check=()
else
  device=cuda images=10000 grid=-1:1:11 model=resnet56 epochs=2 check=(--check_cpu 3)
fi
failed=()
step() {  # step NAME SECONDS COMMAND...: run it with a time limit inside the budget, note a failure, go on
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - SECONDS))
  ((limit > left)) && limit=$left
  if ((limit < 10)); then
    failed+=("$name (not run: under 10 s of the ${BUDGET} s budget left)")
    return
  fi
  echo "== $name ($(date -u +%H:%M:%S), at most $limit s)"
  local started=$SECONDS status=0
  timeout --kill-after=5 "$limit" "$@" || status=$?
  if ((status == 124 || status == 137)); then
    failed+=("$name (timed out after $limit s)")
  elif ((status)); then
    failed+=("$name (exit $status)")
  fi
  echo "== $name took $((SECONDS - started)) s"
}
if [ -n "${GPU_CHECK_SMOKE:-}" ]; then
  echo "CPU smoke run at toy sizes: the commands run; nothing is checked on a GPU"
else
  timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi
timeout 60 $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA device')"
if [ -z "${GPU_CHECK_SMOKE:-}" ] && ! timeout 60 $PY -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
  echo "FAILED: no CUDA device visible to torch (the GPU tests would only be skipped)"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timeout 120 $PY - "$work" "$images" <<'PYEOF' || failed+=("making the CIFAR-format images (exit $?)")
import sys
sys.path.insert(0, "scripts")
from bench_roofline import cifar_folder
cifar_folder(sys.argv[1] + "/cifar", int(sys.argv[2]))
PYEOF
step "GPU tests" 150 $PY -m pytest -q -p no:cacheprovider -m gpu tests/surface/test_job_gpu.py -rs --durations=8
step "$model benchmark" 270 $PY scripts/bench_roofline.py --model $model --cifar_folder "$work/cifar" \
  --grid=$grid --ranks 1 --repeats 1 --device $device --threads 4 "${check[@]}" \
  ${GPU_CHECK_COMPILE:+--compiled}
step "GPU training" 60 $PY -m landscape train --model resnet20 --dataset cifar10 --datapath "$work/cifar" \
  --batch_size 128 --recipe linear --epochs $epochs --device $device --out "$work/train_gpu"
if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
if [ -n "${GPU_CHECK_SMOKE:-}" ]; then
  echo "all steps ran (CPU smoke run: nothing checked on a GPU)"
else
  echo "all GPU checks passed"
fi
