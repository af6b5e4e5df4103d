#!/bin/bash
# The GPU checks in one go, for a machine with a CUDA GPU (a few minutes): the GPU tests (a GPU
# surface against the CPU's, a rerun bit for bit), then ResNet-56 on 10,000 CIFAR-format images on
# an 11x11 grid: points/s against the GPU roofline, auto against the reference settings, and five
# points evaluated again on the CPU, eager and with --compile; then two epochs of landscape train on
# the GPU (NCCL is only used with several GPUs; one GPU checks the device path, the data on the GPU
# and the augmentation there). Paste what it prints into BENCHMARKS.md, with the date.
#
#   scripts/gpu_check.sh            (from the repository, with the venv's python first on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
$PY -m pytest -q -p no:cacheprovider tests/surface/test_gpu.py -rs
$PY scripts/bench_roofline.py --model resnet56 --cifar_images 10000 --grid=-1:1:11 --ranks 1 --repeats 1 --device cuda \
  --threads 4 --check_cpu 5 --compile
work=$(mktemp -d)
$PY - "$work" <<'PYEOF'
import sys
sys.path.insert(0, "scripts")
from bench_roofline import cifar_folder
cifar_folder(sys.argv[1], 10000)
PYEOF
$PY -m landscape train --model resnet20 --dataset cifar10 --datapath "$work" --batch_size 128 --recipe linear \
  --epochs 2 --device cuda --out "$work/train_gpu"
rm -rf "$work"
